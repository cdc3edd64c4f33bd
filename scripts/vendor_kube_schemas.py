"""Vendor the schemas tests/cluster/test_kuberay_schema.py checks deploy/kuberay/ against.

KubeRay's RayCluster CRD is copied as it is; from Kubernetes' OpenAPI (v2, swagger) only the
definitions the manifests' kinds reach are kept, without their descriptions (4 MB down to what the
test reads). Sources and versions: tests/cluster/data/README.md.

    git -C <kuberay> show v1.7.0:helm-chart/kuberay-operator/crds/ray.io_rayclusters.yaml \
        > tests/cluster/data/kuberay-v1.7.0/ray.io_rayclusters.yaml
    git -C <kubernetes-client/python> show v36.0.0:kubernetes/swagger.json.unprocessed > /tmp/swagger.json
    python scripts/vendor_kube_schemas.py /tmp/swagger.json tests/cluster/data/kubernetes-v1.36/definitions.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# The kinds deploy/kuberay/ holds, and ObjectMeta for the RayCluster's own metadata (its CRD says only
# `type: object`; the API server checks it as every object's).
ROOTS = (
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.core.v1.Service",
    "io.k8s.api.core.v1.PersistentVolumeClaim",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
)
PREFIX = "#/definitions/"


def closure(definitions: dict, roots: tuple[str, ...]) -> dict:
    """Every definition reachable from ``roots`` by $ref, descriptions left out."""
    kept: dict = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in kept:
            continue
        kept[name] = strip(definitions[name], todo)
    return dict(sorted(kept.items()))


def strip(node, refs: list[str]):
    if isinstance(node, dict):
        if "$ref" in node:
            refs.append(node["$ref"].removeprefix(PREFIX))
        return {k: strip(v, refs) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v, refs) for v in node]
    return node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("swagger", type=Path, help="Kubernetes' swagger.json")
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    definitions = json.loads(args.swagger.read_text())["definitions"]
    args.out.write_text(json.dumps(closure(definitions, ROOTS), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
