"""deploy/kuberay/ against the schemas the API server would check it with: KubeRay v1.7.0's
RayCluster CRD (its openAPIV3Schema embeds Kubernetes' PodTemplateSpec) and Kubernetes 1.36's
definitions for the Deployments, Services and claims beside it (tests/cluster/data/README.md says
where each comes from). No Kubernetes runs here: this is what `kubectl apply` would refuse before any
pod starts, not whether the pods then run (docs/cluster.md, "Deploy")."""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
CRD = DATA / "kuberay-v1.7.0" / "ray.io_rayclusters.yaml"
DEFINITIONS = DATA / "kubernetes-v1.36" / "definitions.json"
FILES = (ROOT / "deploy/kuberay/services.yaml", ROOT / "deploy/kuberay/raycluster.yaml")
REGISTRY = "registry.example.com/halo"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Where the probes KubeRay injects look (v1.7.0 pod.go, initLivenessAndReadinessProbe): the dashboard
# agent's port, and for Ray before 2.53 also the dashboard's.
DASHBOARD_PORTS = {52365, 8265}


def documents(text: str | None = None) -> list[dict]:
    """Every object of the deploy files, with HALO_REGISTRY substituted as `envsubst` would."""
    if text is None:
        text = "".join(f"---\n{f.read_text()}" for f in FILES)
    return [d for d in yaml.safe_load_all(text.replace("${HALO_REGISTRY}", REGISTRY)) if d]


# --- the schemas, as JSON Schema -------------------------------------------------------------------


@cache
def kubernetes_definitions() -> dict:
    return {name: from_swagger(name, d) for name, d in json.loads(DEFINITIONS.read_text()).items()}


def from_swagger(name: str, node):
    """A Kubernetes OpenAPI v2 definition as JSON Schema, as strict as the API server's decoding."""
    if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
        return {"type": ["string", "number"]}  # "1", 1 and 500m all decode
    if isinstance(node, list):
        return [from_swagger("", v) for v in node]
    if not isinstance(node, dict):
        return node
    if node.get("format") == "int-or-string":
        return {"type": ["integer", "string"]}
    out = {k: from_swagger("", v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if out.get("nullable"):
        out["type"] = [out["type"], "null"]
    # Unknown fields: kubectl's default field validation (strict) refuses them.
    if "properties" in node and "additionalProperties" not in node:
        out["additionalProperties"] = False
    out.pop("nullable", None)
    return out


def from_crd(node):
    """A CRD's structural schema as JSON Schema: unknown fields refused (they would be pruned, and a
    strict apply refuses them), x-kubernetes-int-or-string as integer or string, nullable as null."""
    if isinstance(node, list):
        return [from_crd(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: from_crd(v) for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if node.get("type") == "object" and "additionalProperties" not in node and not preserve:
        out["additionalProperties"] = False
    return out


@cache
def raycluster_schema() -> tuple[str, dict]:
    crd = yaml.load(CRD.read_text(), Loader=yaml.CSafeLoader)
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = from_crd(v1["schema"]["openAPIV3Schema"])
    # The CRD leaves metadata to the API server, which checks it as every object's ObjectMeta.
    schema["properties"]["metadata"] = {"$ref": f"#/definitions/{OBJECT_META}"}
    return f"{crd['spec']['group']}/v1", {**schema, "definitions": kubernetes_definitions()}


@cache
def schema_for(api_version: str, kind: str) -> dict:
    group_version, raycluster = raycluster_schema()
    if (api_version, kind) == (group_version, "RayCluster"):
        return raycluster
    for name, definition in json.loads(DEFINITIONS.read_text()).items():
        for gvk in definition.get("x-kubernetes-group-version-kind", []):
            gv = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
            if (gv, gvk["kind"]) == (api_version, kind):
                return {"$ref": f"#/definitions/{name}", "definitions": kubernetes_definitions()}
    raise AssertionError(f"no schema for {api_version} {kind}")


def errors(doc: dict) -> list[str]:
    schema = schema_for(doc.get("apiVersion"), doc.get("kind"))
    validator = jsonschema.Draft202012Validator(schema)
    return sorted(
        f"{doc['kind']} /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)
    )


# --- the tests -------------------------------------------------------------------------------------


def test_every_object_of_the_deploy_files_is_valid_against_its_schema() -> None:
    docs = documents()
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    assert kinds == [
        ("Deployment", "halo-policy"),
        ("Deployment", "halo-redis"),
        ("Deployment", "halo-trainer"),
        ("PersistentVolumeClaim", "halo-data"),
        ("PersistentVolumeClaim", "halo-redis"),
        ("RayCluster", "halo"),
        ("Service", "halo-redis"),
        ("Service", "halo-trainer"),
    ]
    assert [e for d in docs for e in errors(d)] == []


def _raycluster(docs: list[dict]) -> dict:
    (cluster,) = [d for d in docs if d["kind"] == "RayCluster"]
    return cluster


def _deployment(docs: list[dict], name: str) -> dict:
    (found,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == name]
    return found


def _break_head(docs):
    head = _raycluster(docs)["spec"]["headGroupSpec"]
    head["rayStartParam"] = head.pop("rayStartParams")
    return "RayCluster", "rayStartParam"


def _unnamed_container(docs):
    del _raycluster(docs)["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["name"]
    return "RayCluster", "'name' is a required property"


def _replicas_as_text(docs):
    _raycluster(docs)["spec"]["workerGroupSpecs"][0]["replicas"] = "two"
    return "RayCluster", "'two' is not of type 'integer'"


def _misspelt_mount(docs):
    container = _deployment(docs, "halo-policy")["spec"]["template"]["spec"]["containers"][0]
    container["volumeMount"] = container.pop("volumeMounts")
    return "Deployment", "volumeMount"


def _selectorless_deployment(docs):
    del _deployment(docs, "halo-trainer")["spec"]["selector"]
    return "Deployment", "'selector' is a required property"


def _probe_port_as_list(docs):
    container = _raycluster(docs)["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container["readinessProbe"]["tcpSocket"]["port"] = [6390]
    return "RayCluster", "[6390] is not valid under any of the given schemas"  # int-or-string


def _bad_metadata(docs):
    _raycluster(docs)["metadata"]["label"] = {"app": "halo"}
    return "RayCluster", "label"


@pytest.mark.parametrize(
    "breakage",
    [
        _break_head,
        _unnamed_container,
        _replicas_as_text,
        _misspelt_mount,
        _selectorless_deployment,
        _probe_port_as_list,
        _bad_metadata,
    ],
)
def test_a_wrong_field_is_refused_by_the_schema(breakage) -> None:
    docs = copy.deepcopy(documents())
    kind, expected = breakage(docs)
    found = [e for d in docs if d["kind"] == kind for e in errors(d)]
    assert any(expected in e for e in found), found  # the files as they are have none


def test_the_raycluster_passes_kuberays_own_checks() -> None:
    """What KubeRay v1.7.0's operator refuses beyond the schema (utils/validation.go,
    ValidateRayClusterMetadata, ValidateRayClusterSpec, validateRayGroupResources and
    validateRayGroupLabels), for the fields this manifest sets."""
    cluster = _raycluster(documents())
    spec, name = cluster["spec"], cluster["metadata"]["name"]
    assert len(name) <= 53 and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name)  # a DNS-1035 label
    for group in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
        which = group.get("groupName", "head")
        assert group["template"]["spec"]["containers"], which
        params = group.get("rayStartParams", {})
        # Ray's resources in rayStartParams or in the group's `resources`, never both; labels never there.
        assert not ({"num-cpus", "num-gpus", "memory", "resources"} & set(params) and group.get("resources")), which
        assert "labels" not in params, which
    for group in spec["workerGroupSpecs"]:
        if not spec.get("enableInTreeAutoscaling"):
            assert 0 <= group["minReplicas"] <= group["replicas"] <= group["maxReplicas"], group["groupName"]


def test_every_ray_container_brings_probes_that_need_no_dashboard() -> None:
    """KubeRay injects a probe only where the container has none (pod.go: `if rayContainer.LivenessProbe
    == nil`, the same for readiness), into the pod's first container; both of its kinds ask the
    dashboard agent's HTTP server, which Ray without ray[default]'s packages does not start."""
    lock = (ROOT / "requirements/lock.txt").read_text().lower()
    assert "aiohttp-cors==" not in lock and "aiohttp_cors==" not in lock  # so the images' Ray is minimal
    spec = _raycluster(documents())["spec"]
    templates = [spec["headGroupSpec"]["template"]] + [g["template"] for g in spec["workerGroupSpecs"]]
    for template in templates:
        ray = template["spec"]["containers"][0]
        for probe in ("readinessProbe", "livenessProbe"):
            assert probe in ray, f"{ray['name']}: KubeRay would inject its {probe}"
            (handler,) = [v for k, v in ray[probe].items() if k in ("tcpSocket", "httpGet", "exec", "grpc")]
            asked = json.dumps(handler)
            assert not [p for p in DASHBOARD_PORTS if str(p) in asked], f"{ray['name']} {probe} asks the dashboard"


def test_every_image_comes_from_the_one_registry_setting() -> None:
    text = "".join(f.read_text() for f in FILES)
    assert set(re.findall(r"\$\{(\w+)\}", text)) == {"HALO_REGISTRY"}  # what envsubst is told to replace
    images = [c["image"] for d in documents() for c in _containers(d)]
    assert images and all(i.startswith(f"{REGISTRY}/") for i in images), images
    assert all(":" in i.removeprefix(f"{REGISTRY}/") for i in images), "a tag on every image"


def _containers(doc: dict) -> list[dict]:
    if doc["kind"] == "RayCluster":
        spec = doc["spec"]
        templates = [spec["headGroupSpec"]["template"]] + [g["template"] for g in spec["workerGroupSpecs"]]
    elif doc["kind"] == "Deployment":
        templates = [doc["spec"]["template"]]
    else:
        return []
    return [c for t in templates for c in t["spec"]["containers"]]


def test_the_replicas_request_a_gpu_each() -> None:
    docs = documents()
    for name in ("halo-policy", "halo-trainer"):
        (container,) = _deployment(docs, name)["spec"]["template"]["spec"]["containers"]
        resources = container["resources"]
        # An extended resource is scheduled by its request, which must equal its limit.
        assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == "1", name
