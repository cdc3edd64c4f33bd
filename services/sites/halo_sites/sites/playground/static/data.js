/* Playground: MiniWoB-style one- to three-step tasks. The task's `config` picks the family and
 * its parameters (see docs/sites.md); the state holds what the form holds and what was submitted. */
HALO.defineSite({
  site: "playground",
  collections: {},
  isDone: function (state) { return state.submission !== null; },  // MiniWoB's one-shot episode
  initialState: function (seed, config) {
    const fields = {};
    (config.fields || []).forEach(function (f) { fields[f.name] = ""; });
    const form = { fields: fields, selected: null, checked: [] };
    if (config.family === "streak") form.streak = 0;  // presses in a row so far
    return { form: form, submission: null };
  },
  initialView: function () { return { dropdownOpen: false }; },
});
