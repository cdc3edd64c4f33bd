/* GoMail's data (config.dataset "real": REAL's mailbox, below, instead): a fixed set of hand-written emails that tasks refer to (ids e01..e16, s01, d01,
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

  /* The mailbox REAL's v2 GoMail tasks are written against (config.dataset = "real"): 56 received
  * emails with ids "1".."56", as agisdk's eval scripts name them. Facts the scripts rely on:
  * John Doe's only email is "1"; starred: 2 6 10 14 16 21 26 28 31 37 47 49 53; "notification" in
  * the sender address or subject: 3 4 5 6 17 36 38 56; Uber: 48; no-reply senders: 3 14 34 40 50;
  * received today (2024-07-15): 46 47 48; older than two months: 52..56; four Amazon emails; twelve
  * with "support" in the subject; three from an "alerts" sender. Those words appear nowhere else, so
  * a search for them finds exactly these. The contacts the goals name (Alexa Richardson, Ashley
  * Campbell, Kevin Moore, ...) have written to the owner, so their addresses are in the mailbox. */
  // [id, fromName, from, subject, date, content, flags]
  const ROWS = [
    ["1", "John Doe", "john.doe@example.com", "Quarterly report draft", "2024-07-12T16:20:00", "Hi,\n\nI put the first draft of the quarterly report in the shared folder. Comments welcome before Wednesday.\n\nJohn"],
    ["2", "Danielle Harris", "danielle.harris@example.com", "System update schedule", "2024-07-11T10:05:00", "Hi,\n\nThe new system update is ready on our side. Let me know once it is live so I can tell my team.\n\nDanielle", "s"],
    ["3", "GitHub", "noreply@github.com", "New notification: review requested on halo-web#212", "2024-07-14T21:40:00", "Jordan requested your review on pull request #212: tidy up the settings page."],
    ["4", "LinkedIn", "notifications@linkedin.com", "You appeared in 9 searches this week", "2024-07-13T08:00:00", "See who is looking at your profile and grow your network."],
    ["5", "Slack", "notifications@slack.com", "Unread messages in #design", "2024-07-12T19:12:00", "You have 4 unread messages in #design from Emily and 2 others.", "r"],
    ["6", "Team Calendar", "notifications@teamcalendar.com", "Notification: Weekly sync moved to Thursday", "2024-07-10T09:00:00", "The weekly sync has moved to Thursday at 10:00.", "s"],
    ["7", "Alexa Richardson", "alexa.richardson@example.com", "Onboarding paperwork", "2024-07-09T14:30:00", "Hi Alex,\n\nI am collecting the onboarding paperwork for the new hires. The scanned files should arrive later this week.\n\nBest,\nAlexa"],
    ["8", "Amazon.com", "shipment-tracking@amazon.com", "Your Amazon order has shipped", "2024-07-12T07:45:00", "Your package with a USB-C hub is on its way and arrives Tuesday."],
    ["9", "Helpdesk", "helpdesk@cloudnest.io", "Support ticket #4821 received", "2024-07-11T12:10:00", "We received your request about login problems and will reply within one business day."],
    ["10", "Brian King", "brian.king@example.com", "Thursday planning meeting", "2024-07-10T17:30:00", "Thanks for joining the planning meeting. I took notes and will tidy them up.", "s"],
    ["11", "Helpdesk", "helpdesk@cloudnest.io", "Support ticket #4821 updated", "2024-07-12T09:15:00", "An agent replied to your request. Please sign in to read the reply."],
    ["12", "PrintPro", "care@printpro.com", "Support request: printer offline", "2024-07-08T11:00:00", "Thanks for contacting us. Try restarting the printer while we look into it.", "r"],
    ["13", "Billing Desk", "billing@cloudnest.io", "Support case closed: invoice question", "2024-07-05T15:20:00", "Your case about the June invoice has been closed.", "r"],
    ["14", "First Bank", "noreply@firstbank.com", "Your monthly statement is ready", "2024-07-01T06:00:00", "Your July statement is available in online banking.", "sr"],
    ["15", "Routerly", "care@routerly.com", "Support update: replacement router shipped", "2024-07-09T13:00:00", "Good news: the replacement router ships today."],
    ["16", "Angela White", "angela.white@example.com", "Coverage while I am away", "2024-07-08T16:45:00", "Hi Alex,\n\nI will be taking some time off soon. Could you cover the Friday reports while I am away?\n\nAngela", "s"],
    ["17", "Streamly", "notifications@streamly.tv", "New sign-in to your account", "2024-07-07T22:10:00", "We noticed a new sign-in from Chrome on Windows.", "r"],
    ["18", "Appworks", "care@appworks.dev", "Support ticket #377: app crashes on start", "2024-07-06T10:30:00", "We reproduced the crash and a fix is scheduled for the next release.", "r"],
    ["19", "Amazon.com", "store-news@amazon.com", "Amazon Prime: your membership renews soon", "2024-07-04T08:00:00", "Your Prime membership renews on August 4.", "r"],
    ["20", "Helpdesk", "helpdesk@cloudnest.io", "Support survey: how did we do?", "2024-07-03T09:00:00", "Tell us about your recent experience with our team.", "r"],
    ["21", "Michael Brown", "michael.brown@example.com", "Budget approval", "2024-07-02T15:00:00", "The Q3 budget has been approved. Thanks for the quick turnaround.", "sr"],
    ["22", "Ashley Campbell", "ashley.campbell@example.com", "Team dinner next Friday", "2024-07-11T18:20:00", "Hi everyone,\n\nThe team dinner is booked for next Friday at 7 PM at Luigi's.\n\nAshley"],
    ["23", "PrintPro", "care@printpro.com", "Support request: toner delivery", "2024-06-28T10:00:00", "Your toner order is scheduled for delivery on Monday.", "r"],
    ["24", "Appworks", "care@appworks.dev", "Support ticket #377 resolved", "2024-06-27T16:00:00", "The fix is live. Reply if the crash happens again.", "r"],
    ["25", "Routerly", "care@routerly.com", "Support case opened: slow connection", "2024-06-26T12:00:00", "We opened a case about your slow connection.", "r"],
    ["26", "Emily Johnson", "emily.johnson@example.com", "Design mockups v2", "2024-06-25T11:30:00", "Here are the updated mockups for the landing page.", "sr"],
    ["27", "Billing Desk", "billing@cloudnest.io", "Support reply: refund processed", "2024-06-24T09:40:00", "Your refund of $24.00 was processed.", "r"],
    ["28", "David Wilson", "david.wilson@example.com", "Contract signed", "2024-06-21T14:10:00", "The vendor contract is signed and filed.", "sr"],
    ["29", "Amazon.com", "reviews@amazon.com", "How was your recent Amazon purchase?", "2024-06-20T08:30:00", "Rate the wireless mouse you bought last week.", "r"],
    ["30", "Helpdesk", "helpdesk@cloudnest.io", "Support hours during the holiday", "2024-06-19T10:00:00", "Our team is available from 9 AM to 3 PM on July 4.", "r"],
    ["31", "Sarah Miller", "sarah.miller@example.com", "Conference talk accepted", "2024-06-18T17:00:00", "Great news, our talk was accepted for the autumn conference.", "sr"],
    ["32", "First Bank Alerts", "alerts@firstbank.com", "Large purchase on your card", "2024-07-13T20:05:00", "A purchase of $412.80 was made with your card ending 4410."],
    ["33", "Kevin Moore", "kevin.moore@example.com", "New project starting soon", "2024-07-10T08:50:00", "Hi Alex,\n\nWe are about to start a new project together. I will share more once the scope is final.\n\nKevin"],
    ["34", "Dropbox", "noreply@dropbox.com", "Files were added to your shared folder", "2024-06-17T09:30:00", "Emily added 3 files to the Designs folder.", "r"],
    ["35", "Jane Smith", "jane.smith@example.com", "Question about the invoice", "2024-07-09T10:15:00", "Hi Alex,\n\nCould you confirm the invoice total for June? I want to close the books this week.\n\nJane"],
    ["36", "Facebook", "notifications@facebookmail.com", "You have 5 new notifications", "2024-06-16T19:00:00", "See what your friends have been up to.", "r"],
    ["37", "Robert Taylor", "robert.taylor@example.com", "Lease renewal", "2024-06-14T12:00:00", "Attached is the lease renewal for the office. Please sign by the end of the month.", "sr"],
    ["38", "Asana", "notifications@asana.com", "Task assigned to you: Update roadmap", "2024-06-13T15:30:00", "Emily assigned you a task due on Friday.", "r"],
    ["39", "Barbara Thomas", "barbara.thomas@example.com", "Timeline for Q3", "2024-07-08T09:10:00", "Hi Alex,\n\nWe should agree on the Q3 timeline soon.\n\nBarbara"],
    ["40", "Medium Daily Digest", "noreply@medium.com", "Stories picked for you", "2024-06-12T07:00:00", "Today's highlights from writers you follow.", "r"],
    ["41", "Amazon.com", "order-update@amazon.com", "Your Amazon.com order #112-5531 was delivered", "2024-06-11T18:00:00", "Your package was left at the front door.", "r"],
    ["42", "Charles Davis", "charles.davis@example.com", "Sales pipeline", "2024-07-07T13:40:00", "Hi Alex,\n\nThe pipeline for next quarter looks healthy. Let's talk next week.\n\nCharles"],
    ["43", "Weather Alerts", "alerts@weatherwatch.com", "Heat advisory for your area", "2024-07-14T06:00:00", "Temperatures above 100F are expected this afternoon."],
    ["44", "Carol Adams", "carol.adams@example.com", "Meeting tomorrow", "2024-07-14T16:00:00", "Hi Alex,\n\nLooking forward to our meeting tomorrow at 8 AM.\n\nCarol"],
    ["45", "FlightTracker Alerts", "alerts@flighttracker.com", "Price drop: SFO to SEA", "2024-07-13T11:00:00", "Fares for your saved route dropped to $89."],
    ["46", "Lisa Anderson", "lisa.anderson@example.com", "Lunch today?", "2024-07-15T09:05:00", "Are you free for lunch at 12:30?"],
    ["47", "Mark Thompson", "mark.thompson@example.com", "Standup notes", "2024-07-15T08:40:00", "Notes from this morning's standup are in the team folder.", "s"],
    ["48", "Uber Receipts", "receipts@uber.com", "Your Monday morning trip", "2024-07-15T07:55:00", "Thanks for riding with us. Total: $18.42."],
    ["49", "Jennifer Garcia", "jennifer.garcia@example.com", "Photos from the retreat", "2024-06-10T20:00:00", "I uploaded the retreat photos to the shared album.", "sr"],
    ["50", "Zoom", "noreply@zoom.us", "Cloud recording is now available", "2024-06-07T10:00:00", "The recording of Weekly sync is ready to view.", "r"],
    ["51", "Paul Martinez", "paul.martinez@example.com", "Book club pick", "2024-06-05T18:30:00", "This month's pick is The Left Hand of Darkness.", "r"],
    ["52", "City Library", "events@citylibrary.org", "Spring reading challenge", "2024-04-20T09:00:00", "Join the spring reading challenge and win prizes.", "r"],
    ["53", "Gregory Hall", "gregory.hall@example.com", "Tax documents 2023", "2024-04-10T14:00:00", "Here are the tax documents for 2023. Please keep them for your records.", "sr"],
    ["54", "Karen Young", "karen.young@example.com", "Old photos", "2024-03-28T19:00:00", "I found some old photos from our trip.", "r"],
    ["55", "Steven Clark", "steven.clark@example.com", "March meetup", "2024-03-15T12:00:00", "Thanks for coming to the March meetup.", "r"],
    ["56", "Meetup", "notifications@meetup.com", "Event notification: spring hack night", "2024-03-02T10:00:00", "A new event was posted in one of your groups.", "r"],
  ];

  function realMailbox() {
    const emails = {};
    ROWS.forEach(function (row) {
      const flags = row[6] || "";
      emails[row[0]] = {
        id: row[0], from: row[2], fromName: row[1], to: [ME.email], cc: [], subject: row[3], content: row[5],
        date: row[4], isRead: flags.indexOf("r") !== -1, starred: flags.indexOf("s") !== -1,
        trash: false, sent: false, draft: false, archived: false,
      };
    });
    return emails;
  }

  /* Perturbed starts: a non-zero episode seed moves received mail in time (so the inbox and search
   * results come in another order) and adds two read distractor emails, leaving seed 0 exactly as
   * it was. Nothing a goal or an eval script names moves or is added: today's mail stays today's,
   * REAL's mail older than two months stays there and the rest within the last two months, and the
   * distractors come from senders and words no task, REAL script or search touches (notification,
   * support, alerts, amazon, uber, no-reply, a starred flag, a goal's contact). */
  const DISTRACTORS = [
    ["Garden Club", "club@gardenclub.org", "Summer plant swap", "Bring cuttings and seedlings to the community garden on Saturday morning."],
    ["City Orchestra", "tickets@cityorchestra.org", "Your seats for the summer season", "Your seats for the summer season are in row F. Doors open at 7 PM."],
    ["Elm Street News", "editor@elmstreetnews.org", "Street party in August", "The annual street party is on August 17. Volunteers welcome."],
    ["Clay Studio", "hello@claystudio.com", "Wheel class schedule", "Evening wheel classes start again next week."],
  ];
  const TODAY = "2024-07-15";
  function iso(ms) {
    return new Date(ms).toISOString().slice(0, 19);
  }
  function perturb(emails, seed, real) {
    if (!seed) return;
    const r = HALO.rng(seed);
    // REAL's gomail-11 ("older than 2 months") pins 52..56 before mid-May; everything else stays after.
    const lo = Date.parse((real ? "2024-05-20" : "2024-07-01") + "T06:00:00Z");
    const hi = Date.parse("2024-07-14T22:00:00Z");
    Object.keys(emails).sort().forEach(function (id) {
      const m = emails[id];
      const t = Date.parse(m.date + "Z");
      if (m.sent || m.draft || m.trash || m.date.slice(0, 10) >= TODAY || t < lo) return;
      const shifted = t + (r.int(72 * 60) - 36 * 60) * 60000;
      m.date = iso(Math.min(hi, Math.max(lo, shifted)));
    });
    r.shuffle(DISTRACTORS).slice(0, 2).forEach(function (d, i) {
      const date = iso(Date.parse("2024-07-02T07:00:00Z") + r.int(12 * 24 * 60) * 60000);
      const m = mail("x" + (i + 1), d[0], d[1], d[2], date, d[3], { isRead: true });
      if (real) m.archived = false;
      emails[m.id] = m;
    });
  }

  HALO.defineSite({
    site: "gomail",
    collections: { emails: "email.emails" },
    me: ME,
    now: "2024-07-15T10:30:00",
    initialState: function (seed, config) {
      if (config.dataset === "real") {
        // REAL's v2 tasks (real-offline.gomail-<n>): the mailbox their eval scripts name by id.
        const real = realMailbox();
        perturb(real, seed, true);
        return { email: { emails: real, customLabels: {}, snoozed: {} }, ui: { snackbar: { message: "" } } };
      }
      const emails = {};
      FIXED.concat(filler(Number(config.data_seed || 0))).forEach(function (m) { emails[m.id] = m; });
      perturb(emails, seed, false);
      return { email: { emails: emails }, ui: { snackbar: { message: "" } } };
    },
    initialView: function () {
      return { folder: "inbox", selected: [], compose: null, search: "" };
    },
  });
})();
