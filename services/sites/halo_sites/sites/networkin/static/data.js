/* NetworkIn's data: the member Div Garg (divgarg, Founder & CEO at AGI Inc, San Francisco), 30
 * people, 12 companies, 6 events and a feed. People, companies and events are fixed facts the
 * pages read (SITE.people() ...); what the member changes lives in the state, in the shape REAL's
 * NetworkIn clone reports it:
 *   contactList           {"0": "<username>", ...} the member's connections (a new one appends a key)
 *   connectionGrades      {<username>: 1 | 2 | 3} the degree shown next to each name
 *   ui.feed.postDynamicData {<post id>: {id, type, authorId, description, likes, liked, ...}}
 *   ui.messaging.chatroomData {<username>: {id, participant, messages[], lastMessage, lastMessageAuthorId}}
 *   ui.followedCompanies  {<company id>: true}
 *   ui.searchHistory      {"0": {searchTerm, category}, ...}
 *   ui.events.attendedEvents {<event id>: true}
 * The episode seed (0 = the canonical state) shuffles the order lists are shown in and adds a few
 * distractor people and posts nobody's goal is about; the facts goals rely on never change. */
(function () {
  "use strict";

  const ME = { id: "divgarg", name: "Div Garg", headline: "Founder & CEO at AGI Inc | Building AI agents", location: "San Francisco Bay Area", company: "AGI Inc" };

  // [username, name, headline, location, company, industry, degree, about]
  const PEOPLE = [
    ["sarahchen", "Sarah Chen", "Product Manager at Google", "Mountain View, CA", "Google", "Technology", 1, "Building search experiences people love. Previously at Dropbox."],
    ["michaelwong", "Michael Wong", "Staff Machine Learning Engineer at NVIDIA", "Santa Clara, CA", "NVIDIA", "Technology", 1, "GPUs, compilers and large-scale training."],
    ["emilyjohnson", "Emily Johnson", "Head of Talent at AGI Inc", "San Francisco, CA", "AGI Inc", "Technology", 1, "Hiring the people who build AI agents."],
    ["davidkim", "David Kim", "Venture Partner at Sequoia Capital", "Menlo Park, CA", "Sequoia Capital", "Venture Capital", 1, "Early-stage investor in AI infrastructure."],
    ["rachelgreen", "Rachel Green", "UX Researcher at Airbnb", "San Francisco, CA", "Airbnb", "Technology", 1, "Understanding how people travel."],
    ["jameswilson", "James Wilson", "Senior Software Engineer at Meta", "Menlo Park, CA", "Meta", "Technology", 1, "Infra for feeds at scale. Rust and C++."],
    ["lisawang", "Lisa Wang", "Marketing Director at Salesforce", "San Francisco, CA", "Salesforce", "Technology", 1, "B2B storytelling and brand."],
    ["robertbrown", "Robert Brown", "CTO at Finlytics", "Austin, TX", "Finlytics", "Financial Services", 1, "Scaling fintech platforms."],
    ["anapatel", "Ana Patel", "Research Scientist at OpenAI", "San Francisco, CA", "OpenAI", "Technology", 1, "Reinforcement learning and agents."],
    ["kevinlee", "Kevin Lee", "Founder at Brightpath Labs", "Seattle, WA", "Brightpath Labs", "Technology", 1, "Second-time founder. Developer tools."],
    ["ethanbrooks", "Ethan Brooks", "Software Engineer at Stripe", "Seattle, WA", "Stripe", "Technology", 2, "Payments APIs, distributed systems, open source."],
    ["priyasharma", "Priya Sharma", "Software Engineer at Microsoft | Azure AI", "Redmond, WA", "Microsoft", "Technology", 2, "Shipping AI services on Azure."],
    ["jasonpark", "Jason Park", "Software Engineer at Datadog", "New York, NY", "Datadog", "Technology", 2, "Observability and backend systems in NYC."],
    ["sofiarossi", "Sofia Rossi", "Product Manager at Spotify", "New York, NY", "Spotify", "Technology", 2, "Music discovery and personalization."],
    ["danielgarcia", "Daniel Garcia", "Tech Lead at MongoDB", "New York, NY", "MongoDB", "Technology", 3, "Databases, storage engines and the teams that build them."],
    ["hannahkim", "Hannah Kim", "Financial Analyst at JPMorgan Chase", "New York, NY", "JPMorgan Chase", "Banking", 2, "Equity research and valuation."],
    ["oliviamartinez", "Olivia Martinez", "Product Designer at Figma", "San Francisco, CA", "Figma", "Technology", 2, "Designing collaborative tools. Design systems nerd."],
    ["oliviachen", "Olivia Chen", "Marketing Lead at HubSpot", "Boston, MA", "HubSpot", "Marketing", 2, "Growth marketing and content."],
    ["ninapatel", "Nina Patel", "Data Scientist at Airbnb", "San Francisco, CA", "Airbnb", "Technology", 2, "Experimentation, causal inference and pricing models."],
    ["carlosmendes", "Carlos Mendes", "Data Scientist at Netflix", "Los Gatos, CA", "Netflix", "Entertainment", 3, "Recommendation models."],
    ["amywu", "Amy Wu", "Recruiter at Amazon", "Seattle, WA", "Amazon", "Technology", 2, "Recruiting engineers for AWS."],
    ["tomharris", "Tom Harris", "Sales Manager at Oracle", "Austin, TX", "Oracle", "Technology", 3, "Enterprise sales."],
    ["mayasingh", "Maya Singh", "Frontend Engineer at Shopify", "Toronto, Canada", "Shopify", "Technology", 2, "React, accessibility and design systems."],
    ["benjaminclark", "Benjamin Clark", "Attorney at Cooley LLP", "Palo Alto, CA", "Cooley LLP", "Law Practice", 3, "Startup and venture law."],
    ["gracelee", "Grace Lee", "Operations Manager at Tesla", "Fremont, CA", "Tesla", "Automotive", 2, "Manufacturing operations."],
    ["alexturner", "Alex Turner", "Student at Stanford University", "Stanford, CA", "Stanford University", "Higher Education", 2, "CS undergrad, interested in AI agents."],
  ];
  // Distractors the seed may add (never a software engineer, a New York techie or an Olivia).
  const EXTRA_PEOPLE = [
    ["laurabaker", "Laura Baker", "Nurse Practitioner at Kaiser Permanente", "Oakland, CA", "Kaiser Permanente", "Hospital & Health Care", 3, "Primary care."],
    ["peterschmidt", "Peter Schmidt", "Architect at Gensler", "Chicago, IL", "Gensler", "Architecture", 3, "Workplace design."],
    ["ireneflores", "Irene Flores", "High School Teacher", "Denver, CO", "Denver Public Schools", "Education", 3, "Teaching math."],
    ["marknguyen", "Mark Nguyen", "Chef at Nopa", "San Francisco, CA", "Nopa", "Restaurants", 3, "Seasonal cooking."],
    ["juliafischer", "Julia Fischer", "Supply Chain Planner at Target", "Minneapolis, MN", "Target", "Retail", 3, "Demand planning."],
  ];
  // The member's conversations before the episode (the others have none yet).
  const CHATS = [
    ["sarahchen", [["sarahchen", "Great meeting you at the AI summit! Let's grab coffee soon."], ["divgarg", "Absolutely, how about next week?"]]],
    ["davidkim", [["divgarg", "Thanks for the intro to the partners."], ["davidkim", "Anytime. Keep me posted on the seed round."]]],
    ["emilyjohnson", [["emilyjohnson", "Three new candidates for the agents team are in the tracker."]]],
    ["anapatel", [["anapatel", "Loved your talk on web agents!"], ["divgarg", "Thank you Ana, means a lot."]]],
  ];

  // [id, name, industry, followers, tagline, headquarters]
  const COMPANIES = [
    ["microsoft", "Microsoft", "Software Development", "23,512,004", "Empower every person and every organization on the planet to achieve more.", "Redmond, Washington"],
    ["google", "Google", "Software Development", "31,870,112", "Organize the world's information and make it universally accessible and useful.", "Mountain View, California"],
    ["apple", "Apple", "Computers and Electronics Manufacturing", "17,201,889", "We're a diverse collective of thinkers and doers.", "Cupertino, California"],
    ["amazon", "Amazon", "Software Development", "30,450,318", "Earth's most customer-centric company.", "Seattle, Washington"],
    ["nvidia", "NVIDIA", "Computer Hardware Manufacturing", "3,905,220", "The pioneer of accelerated computing.", "Santa Clara, California"],
    ["openai", "OpenAI", "Research Services", "5,102,437", "Ensuring that artificial general intelligence benefits all of humanity.", "San Francisco, California"],
    ["meta", "Meta", "Software Development", "10,284,551", "Building the future of human connection.", "Menlo Park, California"],
    ["salesforce", "Salesforce", "Software Development", "4,120,877", "The #1 AI CRM.", "San Francisco, California"],
    ["tesla", "Tesla", "Motor Vehicle Manufacturing", "9,802,300", "Accelerating the world's transition to sustainable energy.", "Austin, Texas"],
    ["stripe", "Stripe", "Technology, Information and Internet", "1,320,455", "Financial infrastructure for the internet.", "South San Francisco, California"],
    ["datadog", "Datadog", "Software Development", "640,118", "Modern monitoring and security.", "New York, New York"],
    ["agi-inc", "AGI Inc", "Technology, Information and Internet", "48,210", "Building AI agents that use computers like people do.", "San Francisco, California"],
  ];

  // [id, title, organizer, when, format, place, attendees, description]
  const EVENTS = [
    ["ev-ai-agents", "AI Agents Summit 2024", "AGI Inc", "Thu, Jul 25, 2024, 9:00 AM PDT", "In person", "Moscone Center, San Francisco", 1240, "Talks and demos from the teams building autonomous web agents, with a startup showcase."],
    ["ev-founders", "Founders & Funders Mixer", "Sequoia Capital", "Tue, Jul 30, 2024, 6:00 PM PDT", "In person", "Menlo Park, CA", 310, "Meet early-stage investors and fellow founders over drinks."],
    ["ev-ml-infra", "Scaling ML Infrastructure", "NVIDIA", "Wed, Aug 7, 2024, 10:00 AM PDT", "Online", "Online event", 2875, "A live session on training clusters, inference serving and cost."],
    ["ev-women-tech", "Women in Tech NYC Meetup", "Datadog", "Thu, Aug 8, 2024, 6:30 PM EDT", "In person", "New York, NY", 520, "Networking and lightning talks from engineers and product leaders."],
    ["ev-design", "Design Systems Day", "Figma", "Mon, Aug 12, 2024, 11:00 AM PDT", "Online", "Online event", 980, "How teams build and maintain design systems."],
    ["ev-career", "Career Fair: New Grads in AI", "Stanford University", "Fri, Aug 16, 2024, 1:00 PM PDT", "In person", "Stanford, CA", 760, "Meet recruiters from AI companies hiring new graduates."],
  ];

  // [id, authorId, time, text, likes, comments, reposts]
  const POSTS = [
    ["post-1", "michaelwong", "2h", "We just open-sourced our distributed training toolkit. It cut our time-to-train by 40% on large clusters. Link in the comments!", 412, 38, 21],
    ["post-2", "sarahchen", "5h", "Hiring! Our team at Google is looking for a product manager who loves search quality and working with ML engineers. DM me if you know someone great.", 231, 19, 12],
    ["post-3", "anapatel", "1d", "New paper: agents that learn from their own browsing mistakes. Grateful to my co-authors for a wonderful year of work.", 1204, 87, 64],
    ["post-4", "davidkim", "2d", "Five things I look for in a seed-stage AI company: a sharp wedge, fast iteration, honest metrics, a great team, and customers who would be upset if you disappeared.", 856, 102, 45],
    ["post-5", "lisawang", "3d", "Dreamforce is around the corner. Who's coming? Let's meet up!", 97, 14, 3],
    ["post-6", "divgarg", "1w", "Thrilled to share that AGI Inc is partnering with leading universities on open benchmarks for web agents.", 1580, 143, 77],
  ];
  const EXTRA_POSTS = [
    ["post-x1", "laurabaker", "4h", "Grateful for my team after a long week of night shifts. Take care of each other!", 44, 6, 1],
    ["post-x2", "peterschmidt", "6h", "Our new office design for a Chicago client just won a regional award.", 73, 9, 2],
    ["post-x3", "juliafischer", "1d", "Back-to-school season planning is in full swing in retail.", 31, 2, 0],
  ];

  function person(p) {
    return { id: p[0], name: p[1], headline: p[2], location: p[3], company: p[4], industry: p[5], degree: p[6], about: p[7] };
  }
  function extrasFor(seed, list, n) {
    // Seed 0 adds nothing; another seed adds n of the distractors, chosen by HALO.rng.
    return seed ? HALO.rng(seed * 7 + 3).shuffle(list).slice(0, n) : [];
  }
  function seedOf() {
    return Number(HALO.meta().seed || 0);
  }
  function people(seed) {
    return PEOPLE.concat(extrasFor(seed, EXTRA_PEOPLE, 3)).map(person);
  }
  function participant(p) {
    return { id: p.id, name: p.name, headline: p.headline };
  }

  function initialState(seed) {
    const all = people(seed);
    const byId = {};
    all.forEach(function (p) { byId[p.id] = p; });
    const contactList = {};
    const grades = {};
    all.filter(function (p) { return p.degree === 1; }).forEach(function (p, i) { contactList[String(i)] = p.id; });
    all.forEach(function (p) { grades[p.id] = p.degree; });
    const chatroomData = {};
    CHATS.forEach(function (c, ci) {
      const messages = c[1].map(function (m, i) {
        return { id: "m" + (ci + 1) + "-" + (i + 1), authorId: m[0], message: m[1], type: "text" };
      });
      const last = messages[messages.length - 1];
      chatroomData[c[0]] = { id: c[0], participant: participant(byId[c[0]]), messages: messages, lastMessage: last.message, lastMessageAuthorId: last.authorId };
    });
    const postDynamicData = {};
    POSTS.concat(extrasFor(seed, EXTRA_POSTS, 2)).forEach(function (p, i) {
      postDynamicData[p[0]] = {
        id: p[0], type: p[1] === ME.id ? "self-post" : "feed-post", authorId: p[1], description: p[3],
        time: p[2], likes: p[4], liked: false, comments: p[5], reposts: p[6], order: i,
      };
    });
    return {
      contactList: contactList,
      connectionGrades: grades,
      ui: {
        feed: { postDynamicData: postDynamicData },
        messaging: { chatroomData: chatroomData },
        followedCompanies: { "agi-inc": true },
        searchHistory: { "0": { searchTerm: "stanford ai lab", category: "all" }, "1": { searchTerm: "sequoia capital", category: "companies" } },
        events: { attendedEvents: {} },
      },
    };
  }

  let cache = null;
  HALO.defineSite({
    site: "networkin",
    collections: { posts: "ui.feed.postDynamicData", chats: "ui.messaging.chatroomData" },
    me: ME,
    people: function () {
      const seed = seedOf();
      if (!cache || cache.seed !== seed) cache = { seed: seed, list: people(seed) };
      return cache.list;
    },
    companies: COMPANIES.map(function (c) { return { id: c[0], name: c[1], industry: c[2], followers: c[3], tagline: c[4], hq: c[5] }; }),
    events: EVENTS.map(function (e) { return { id: e[0], title: e[1], organizer: e[2], when: e[3], format: e[4], place: e[5], attendees: e[6], description: e[7] }; }),
    participant: participant,
    initialState: function (seed) { return initialState(seed); },
    initialView: function () { return { modal: null, query: "", toast: null }; },
  });
})();
