/* GoMail's data: a fixed set of hand-written emails that tasks refer to (ids e01..e16, s01, d01,
 * t01) plus filler generated from `config.data_seed` (default 0). The mailbox owner is Alex Morgan;
 * "today" is Monday 2024-07-15 and the clock never moves (new mail gets 10:30 + n minutes). */
(function () {
  "use strict";
  const ME = { name: "Alex Morgan", email: "alex.morgan@gomail.com" };

  function mail(id, fromName, from, subject, date, content, flags) {
    return Object.assign({
      id: id, from: from, fromName: fromName, to: [ME.email], cc: [], subject: subject, content: content,
      date: date, isRead: false, starred: false, trash: false, sent: false, draft: false,
    }, flags || {});
  }

  const FIXED = [
    mail("e01", "Priya Raman", "priya.raman@acme.com", "Q3 budget review", "2024-07-15T09:41:00",
      "Hi Alex,\n\nAttached is the draft of the Q3 budget. Could you review the marketing line items before Thursday? I want to send the final version to finance on Friday.\n\nThanks,\nPriya"),
    mail("e02", "SkyJet Airlines", "bookings@skyjet.com", "Your flight confirmation code", "2024-07-15T08:05:00",
      "Thank you for booking with SkyJet.\n\nYour confirmation code is K7Q2ZP.\n\nFlight SJ 482 from San Francisco (SFO) to Seattle (SEA) departs on Friday, July 26 at 8:15 AM. Check-in opens 24 hours before departure."),
    mail("e03", "Marcus Chen", "marcus.chen@acme.com", "Team offsite logistics", "2024-07-14T17:22:00",
      "Hey Alex,\n\nThe offsite is confirmed for August 8-9 in Half Moon Bay. Please book your room by July 25 and let me know about any dietary restrictions.\n\nMarcus"),
    mail("e04", "Deals Weekly", "news@dealsweekly.com", "This week's top deals: 40% off headphones", "2024-07-14T07:00:00",
      "Top picks this week: noise-cancelling headphones at 40% off, smart speakers from $29, and more. Shop now before the deals end."),
    mail("e05", "Marcus Chen", "marcus.chen@acme.com", "Re: Hiring plan", "2024-07-12T15:03:00",
      "Agreed on two backend roles for Q3. I'll draft the job descriptions next week.", { isRead: true }),
    mail("e06", "Deals Weekly", "news@dealsweekly.com", "Flash sale ends tonight", "2024-07-12T06:30:00",
      "Last chance: our flash sale ends at midnight. Up to 60% off laptops, tablets and accessories.", { isRead: true }),
    mail("e07", "HR Team", "hr@acme.com", "Open enrollment closes July 31", "2024-07-11T11:00:00",
      "Reminder: benefits open enrollment closes on July 31. Review your medical, dental and vision choices in the HR portal.", { isRead: true, starred: true }),
    mail("e08", "Jordan Kim", "jordan.kim@acme.com", "Design review notes", "2024-07-11T10:12:00",
      "Notes from today's design review: the new onboarding flow is approved, the settings page needs another pass, and the icon set ships next sprint."),
    mail("e09", "Deals Weekly", "news@dealsweekly.com", "Your weekend picks", "2024-07-09T07:00:00",
      "Weekend picks: camping gear, grills and outdoor speakers. Free shipping on orders over $35.", { isRead: true }),
    mail("e10", "Elena Petrova", "elena.petrova@acme.com", "Server maintenance window", "2024-07-10T16:45:00",
      "Hi all,\n\nThe production servers will be down for maintenance on Saturday, July 20, from 22:00 to 02:00. Please plan deployments around it.\n\nElena", { isRead: true }),
    mail("e11", "Taylor Brooks", "taylor.brooks@acme.com", "Lunch next week?", "2024-07-13T12:30:00",
      "Want to grab lunch next week? Tuesday or Wednesday works for me."),
    mail("e12", "IT Helpdesk", "helpdesk@acme.com", "Your password expires in 5 days", "2024-07-13T09:00:00",
      "Your network password expires in 5 days. Change it from the IT portal to avoid losing access.", { isRead: true }),
    mail("e13", "Marcus Chen", "marcus.chen@acme.com", "Offsite venue options", "2024-07-08T14:10:00",
      "Here are three venue options for the offsite. I lean towards the one by the beach."),
    mail("e14", "Sam Lee", "sam.lee@acme.com", "Coffee chat", "2024-07-08T09:20:00",
      "Thanks for the coffee chat last week. Let's do it again soon!", { isRead: true }),
    mail("e15", "Nadia Haddad", "nadia.haddad@acme.com", "Customer feedback summary", "2024-07-05T13:00:00",
      "The June survey results are in: satisfaction is up 6 points; the most requested feature is calendar sync.", { isRead: true }),
    mail("e16", "Social Buzz", "notify@socialbuzz.com", "You have 3 new followers", "2024-07-06T18:00:00",
      "Jamie, Chris and 1 other started following you.", { isRead: true }),
    mail("s01", ME.name, ME.email, "Re: Q2 report", "2024-07-09T10:00:00",
      "Thanks Priya, the Q2 report looks great.", { to: ["priya.raman@acme.com"], isRead: true, sent: true }),
    mail("d01", ME.name, ME.email, "Offsite agenda", "2024-07-12T18:00:00",
      "Draft agenda: day 1 strategy, day 2 team building.", { to: ["marcus.chen@acme.com"], isRead: true, draft: true }),
    mail("t01", "Old News", "digest@oldnews.com", "Your June digest", "2024-07-01T08:00:00",
      "The best stories of June.", { isRead: true, trash: true }),
  ];

  // Filler senders never include Deals Weekly, Marcus Chen, Priya Raman, SkyJet or Elena Petrova,
  // so tasks about those are exact whatever the data seed.
  const FILLER = [
    ["Chris Walker", "chris.walker@acme.com", ["Sprint retro", "Build times", "Code review request", "On-call handover"]],
    ["Dana Ortiz", "dana.ortiz@acme.com", ["Marketing plan draft", "Webinar recap", "Launch checklist"]],
    ["Kevin Moore", "kevin.moore@partner.io", ["Contract renewal", "Invoice #4471", "Integration timeline"]],
    ["Weather Daily", "daily@weatherdaily.com", ["Sunny week ahead", "Heat advisory for your area"]],
    ["BookNook", "hello@booknook.com", ["New releases you might like", "Your reading list"]],
    ["Fitness Club", "team@fitclub.com", ["Your July class schedule", "New yoga classes"]],
  ];
  const LINES = [
    "Quick update before the end of the week.", "Let me know if you have any questions.",
    "Sharing this for visibility.", "Happy to discuss on our next call.", "See the details below.",
  ];

  function filler(seed) {
    const r = HALO.rng(seed);
    const out = [];
    for (let i = 0; i < 14; i++) {
      const sender = r.pick(FILLER);
      const day = 1 + r.int(13);
      const hour = 7 + r.int(11);
      const minute = r.int(60);
      const date = "2024-07-" + String(day).padStart(2, "0") + "T" + String(hour).padStart(2, "0") + ":" + String(minute).padStart(2, "0") + ":00";
      out.push(mail("f" + String(i + 1).padStart(2, "0"), sender[0], sender[1], r.pick(sender[2]), date,
        r.pick(LINES) + "\n\n" + r.pick(LINES), { isRead: r.next() < 0.75 }));
    }
    return out;
  }

  HALO.defineSite({
    site: "gomail",
    collections: { emails: "email.emails" },
    me: ME,
    now: "2024-07-15T10:30:00",
    initialState: function (seed, config) {
      const emails = {};
      FIXED.concat(filler(Number(config.data_seed || 0))).forEach(function (m) { emails[m.id] = m; });
      return { email: { emails: emails }, ui: { snackbar: { message: "" } } };
    },
    initialView: function () {
      return { folder: "inbox", selected: [], compose: null, search: "" };
    },
  });
})();
