/* GoCalendar's data: Alex Morgan's calendar. "Today" is Monday 2024-07-15; the week shown first is
 * Sunday 14 to Saturday 20 July. Hand-written events (ev01..ev22) that tasks refer to, plus a few
 * gym sessions in other weeks generated from `config.data_seed` (default 0). Times are local,
 * ISO "YYYY-MM-DDTHH:MM:00". */
(function () {
  "use strict";

  function ev(id, title, day, start, end, extra) {
    return Object.assign({
      id: id, title: title, start: "2024-" + day + "T" + start + ":00", end: "2024-" + day + "T" + end + ":00",
      description: "", guests: [], location: "",
    }, extra || {});
  }

  const FIXED = [
    ev("ev01", "Team standup", "07-15", "09:30", "09:45"),
    ev("ev02", "Team standup", "07-16", "09:30", "09:45"),
    ev("ev03", "Team standup", "07-17", "09:30", "09:45"),
    ev("ev04", "Team standup", "07-18", "09:30", "09:45"),
    ev("ev05", "Team standup", "07-19", "09:30", "09:45"),
    ev("ev06", "Dentist appointment", "07-16", "15:00", "16:00", { description: "Dr. Alvarez, 220 Market St", location: "220 Market St" }),
    ev("ev07", "Design review", "07-17", "14:00", "15:00", { guests: ["jordan.kim@acme.com", "nadia.haddad@acme.com"], description: "Onboarding flow and settings page" }),
    ev("ev08", "Quarterly planning", "07-18", "10:00", "12:00", { guests: ["priya.raman@acme.com", "marcus.chen@acme.com"], location: "Room 4B" }),
    ev("ev09", "Lunch with Sam", "07-18", "12:30", "13:30", { guests: ["sam.lee@acme.com"], description: "Sushi place on 3rd Street" }),
    ev("ev10", "Focus time", "07-15", "13:00", "15:00"),
    ev("ev11", "Focus time", "07-17", "10:00", "12:00"),
    ev("ev12", "Focus time", "07-19", "13:00", "15:00"),
    ev("ev13", "Yoga class", "07-20", "08:00", "09:00", { location: "Sunset Studio" }),
    ev("ev14", "1:1 with Marcus", "07-19", "11:00", "11:30", { guests: ["marcus.chen@acme.com"] }),
    ev("ev15", "Project sync", "07-17", "16:00", "16:30", { guests: ["elena.petrova@acme.com"] }),
    ev("ev16", "Team offsite", "08-08", "09:00", "17:00", { location: "Half Moon Bay" }),
    ev("ev17", "Flight to Seattle", "07-26", "08:15", "10:30", { description: "SkyJet SJ 482, code K7Q2ZP" }),
    ev("ev18", "Book club", "07-10", "19:00", "20:00"),
    ev("ev19", "Mom's birthday dinner", "07-23", "19:00", "21:00"),
    ev("ev20", "Sprint planning", "07-22", "10:00", "11:00", { guests: ["chris.walker@acme.com"] }),
    ev("ev21", "Rent due", "07-01", "09:00", "09:30"),
    ev("ev22", "Haircut", "07-27", "11:00", "11:45"),
  ];

  // Gym sessions on days outside the current week, so tasks about the week stay exact.
  const GYM_DAYS = ["07-02", "07-03", "07-05", "07-08", "07-09", "07-11", "07-12", "07-24", "07-25", "07-29", "07-30", "07-31"];

  // REAL's v2 GoCalendar tasks (real-offline.gocalendar-<n>, config.dataset "real"): the same
  // calendar plus the events their goals name, stored as REAL stores them: UTC instants
  // ("2024-07-17T18:00:00.000Z") for a user in Pacific time (PDT, UTC-7, on every date these tasks
  // use), all-day events at 00:00Z of their first and last day; and REAL's /finish lists
  // differences.events as maps of id -> event.
  const REAL_EVENTS = [
    ev("ev23", "Dinner with friends", "07-17", "19:00", "21:00", { location: "Luigi's Trattoria" }),
    ev("ev24", "Reading time", "07-17", "22:00", "23:00"),
    ev("ev25", "Coffee with sister", "07-18", "08:00", "09:00", { location: "Blue Bottle Coffee" }),
    ev("ev26", "Project sync", "07-15", "11:00", "11:30", { guests: ["elena.petrova@acme.com"] }),
  ];
  /* Perturbed starts: a non-zero episode seed adds three distractor events (ids xev1..xev3) on days
   * around the current week; seed 0 adds none. Their titles share no word with any goal or REAL
   * script (dinner, friends, reading, coffee, sister, gym, clothes, math, camp, email, project, focus
   * ...), and the eval scripts read only what changed, so an untouched distractor changes no verdict. */
  const DISTRACTORS = ["Water the plants", "Car service", "Piano lesson", "Farmers market", "Pay utility bill"];
  function distractors(seed) {
    if (!seed) return [];
    const r = HALO.rng(seed);
    return r.shuffle(DISTRACTORS).slice(0, 3).map(function (title, i) {
      const day = "07-" + String(8 + r.int(20)).padStart(2, "0");
      const start = (8 + r.int(10)) * 60 + 30 * r.int(2);
      const end = start + 30 * (1 + r.int(2));
      function hm(m) { return String(Math.floor(m / 60)).padStart(2, "0") + ":" + String(m % 60).padStart(2, "0"); }
      return ev("xev" + (i + 1), title, day, hm(start), hm(end));
    });
  }
  function utc(local) {
    return new Date(Date.parse(local + "Z") + 7 * 3600 * 1000).toISOString();
  }
  // The page builds its collections before HALO knows the episode: it reads the episode's config
  // (written by /config) from storage itself.
  const META = JSON.parse(localStorage.getItem("halo:gocalendar:meta") || "{}");
  const REAL = ((META && META.config) || {}).dataset === "real";

  HALO.defineSite({
    site: "gocalendar",
    collections: { events: REAL ? { path: "calendar.events", keyed: true } : "calendar.events" },
    pacificUtc: REAL,
    today: "2024-07-15",
    initialState: function (seed, config) {
      if (config.dataset === "real") {
        const real = {};
        FIXED.concat(REAL_EVENTS, distractors(seed)).forEach(function (e) { real[e.id] = Object.assign({}, e, { start: utc(e.start), end: utc(e.end) }); });
        return { calendar: { events: real }, ui: { snackbar: { message: "" } } };
      }
      const r = HALO.rng(Number(config.data_seed || 0));
      const events = {};
      FIXED.forEach(function (e) { events[e.id] = e; });
      r.shuffle(GYM_DAYS).slice(0, 5).sort().forEach(function (day, i) {
        const hour = String(6 + r.int(3)).padStart(2, "0");
        const e = ev("gym" + (i + 1), "Gym", day, hour + ":00", hour + ":45");
        events[e.id] = e;
      });
      distractors(seed).forEach(function (e) { events[e.id] = e; });
      return { calendar: { events: events }, ui: { snackbar: { message: "" } } };
    },
    initialView: function () {
      return { details: null, editor: null };
    },
  });
})();
