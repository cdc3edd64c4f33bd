/* Topwork's data: the client account of Sarah Johnson (an Upwork-like marketplace, client side).
 * The state has REAL's v2 Topwork shape, which its eval scripts read:
 *   jobs.jobs.<id>                 her job posts {id, title, description, category, skills[],
 *                                  hourlyRateFrom, hourlyRateTo, estimateSize, estimateTime,
 *                                  estimateLevelExperience, estimateHireOpportunity, status,
 *                                  postedDate, applications[{freelancerId, ...}]}
 *   jobs.removedJobPosts           the removed posts (absent until the first removal)
 *   messages.contactList.<id>      conversations {id, name, job, lastMessage, lastMessageAuthor,
 *                                  lastMessageDate, unread, messages: {"0": {author, message, date, type}}}
 *   messages.selectedChatId        the open conversation (absent until one is opened)
 *   offers.offers.<id>             offers sent {id, freelancerId, contractTitle, hourlyRate, ..., status}
 *   saved.savedFreelancerIds       saved talent
 * Freelancer ids are REAL's (the full name in lower case: ashleycampbell, brandonmartinez,
 * alexrodriguez). The talent directory and past contracts are fixed data, not state. The episode
 * seed adds a few unrelated freelancers and reorders lists (see app.js); the state never depends
 * on it. Local and REAL tasks share this data: the site was written against REAL's shape. */
(function () {
  "use strict";

  // [id, name, title, location, rate, job success %, earned, skills, available, last project, overview]
  const TALENT = [
    ["ashleycampbell", "Ashley Campbell", "Backend Developer", "Austin, TX", 65, 98, "$120K+", ["Python", "Django", "PostgreSQL", "AWS", "REST APIs"], true,
      "Backend Developer for Social Media Platform", "I build reliable APIs and backend services in Python and Django, from schema design to deployment on AWS."],
    ["brandonmartinez", "Brandon Martinez", "Full-Stack Developer", "Denver, CO", 70, 96, "$90K+", ["React", "Node.js", "TypeScript", "MongoDB", "GraphQL"], true,
      "Full-Stack Developer for Meal Planning App", "Full-stack JavaScript developer shipping React front ends and Node.js services for startups."],
    ["jameswilson", "James Wilson", "Full Stack Engineer", "Chicago, IL", 60, 93, "$60K+", ["Ruby on Rails", "React", "PostgreSQL", "Heroku"], true,
      "Rails Engineer for Booking Platform", "Ten years of Rails and React. I take products from prototype to production."],
    ["emilychen", "Emily Chen", "Data Scientist", "Seattle, WA", 75, 100, "$150K+", ["Python", "pandas", "SQL", "Tableau", "Statistics"], true,
      "Churn Analysis for Subscription Service", "I turn messy data into clear dashboards and forecasts your team can act on."],
    ["priyapatel", "Priya Patel", "Machine Learning Engineer", "San Jose, CA", 90, 97, "$200K+", ["Python", "TensorFlow", "PyTorch", "scikit-learn"], false,
      "Recommendation Engine for E-commerce Store", "Machine learning engineer focused on recommendation and ranking systems."],
    ["kevinwright", "Kevin Wright", "Financial Analyst", "Boston, MA", 55, 95, "$40K+", ["Excel", "Financial Modeling", "Forecasting", "QuickBooks"], true,
      "Three-Year Forecast for Fitness Studio Chain", "CFA charterholder helping small businesses with budgets, forecasts and investor models."],
    ["davidkim", "David Kim", "UI/UX Designer", "Portland, OR", 50, 99, "$80K+", ["Figma", "Sketch", "Prototyping", "User Research"], true,
      "Mobile App Redesign for Yoga Studio", "Product designer crafting simple, accessible interfaces for web and mobile apps."],
    ["oliviabrown", "Olivia Brown", "Graphic Designer", "Miami, FL", 45, 94, "$30K+", ["Adobe Illustrator", "Branding", "Logo Design"], true,
      "Brand Identity for Organic Juice Bar", "Brand and logo designer with a playful, bold style."],
    ["laurabennett", "Laura Bennett", "Copywriter", "Nashville, TN", 40, 92, "$20K+", ["SEO Writing", "Copywriting", "WordPress"], true,
      "Landing Page Copy for Running Shoe Brand", "Conversion copywriter for health and fitness brands."],
    ["jessicalee", "Jessica Lee", "Content Writer", "Phoenix, AZ", 35, 90, "$10K+", ["Blog Writing", "Editing", "WordPress"], true,
      "Twelve Articles for Nutrition Blog", "Friendly, well-researched articles about health, food and fitness."],
    ["ryanmurphy", "Ryan Murphy", "iOS Developer", "San Diego, CA", 68, 95, "$70K+", ["Swift", "SwiftUI", "Firebase"], true,
      "Habit Tracker iPhone App", "Native iOS developer who cares about smooth animations and battery life."],
    ["alexrodriguez", "Alex Rodriguez", "Mobile App Developer", "Los Angeles, CA", 60, 97, "$50K+", ["React Native", "Flutter", "Firebase"], false,
      "Workout Timer App for Personal Trainer", "Cross-platform mobile developer building apps with React Native and Flutter."],
    ["danielgarcia", "Daniel Garcia", "Project Manager", "Dallas, TX", 58, 100, "$90K+", ["Agile", "Scrum", "Jira", "Stakeholder Management"], true,
      "Project Manager for Website Relaunch", "Certified Scrum Master who keeps remote teams shipping on time."],
    ["natalieross", "Natalie Ross", "QA Engineer", "Atlanta, GA", 45, 96, "$40K+", ["Selenium", "Cypress", "Test Plans"], true,
      "QA Testing for Website Relaunch", "Manual and automated testing for web and mobile releases."],
    ["michaelthompson", "Michael Thompson", "DevOps Engineer", "Raleigh, NC", 80, 94, "$110K+", ["Docker", "Kubernetes", "AWS", "Terraform"], true,
      "CI/CD Pipeline for Health Startup", "I automate builds, deployments and cloud infrastructure."],
    ["sophiawilliams", "Sophia Williams", "Virtual Assistant", "Tampa, FL", 25, 98, "$20K+", ["Scheduling", "Customer Support", "Google Workspace"], true,
      "Executive Assistant for Coaching Business", "Organised assistant for inboxes, calendars and customer questions."],
  ];
  // Extra people the episode seed may add to the directory: trades no task asks about.
  const EXTRA_TALENT = [
    ["tomasberg", "Tomas Berg", "Video Editor", "Minneapolis, MN", 42, 91, "$20K+", ["Premiere Pro", "After Effects", "Color Grading"], true,
      "Promo Video for Climbing Gym", "Video editor for ads, promos and YouTube channels."],
    ["hanasato", "Hana Sato", "Illustrator", "Honolulu, HI", 48, 99, "$30K+", ["Procreate", "Children's Books", "Character Design"], true,
      "Picture Book Illustrations", "Warm, hand-drawn illustrations for books and packaging."],
    ["marcorossi", "Marco Rossi", "Voice Over Artist", "Providence, RI", 38, 95, "$10K+", ["Voice Over", "Audio Editing", "Narration"], true,
      "Narration for Meditation Podcast", "Calm, clear narration for podcasts, e-learning and ads."],
    ["inesduarte", "Ines Duarte", "Portuguese Translator", "Newark, NJ", 30, 97, "$10K+", ["Portuguese", "Spanish", "Proofreading"], true,
      "Translation of Fitness Guides", "Native Portuguese speaker translating marketing and product texts."],
    ["yusufdemir", "Yusuf Demir", "Bookkeeper", "Columbus, OH", 33, 93, "$20K+", ["Bookkeeping", "Xero", "Payroll"], true,
      "Monthly Books for Bakery", "Accurate, on-time bookkeeping for small businesses."],
    ["claredubois", "Clare Dubois", "Social Media Manager", "Baltimore, MD", 36, 92, "$20K+", ["Instagram", "Content Calendar", "Canva"], true,
      "Instagram Growth for Boutique Gym", "Social media manager growing local brands with consistent content."],
  ];
  const COLORS = ["#14a800", "#1f57c3", "#9b59b6", "#e67e22", "#16a085", "#c0392b", "#2c3e50", "#d35400"];

  function person(row, i) {
    return {
      id: row[0], name: row[1], title: row[2], location: row[3], rate: row[4], jobSuccess: row[5], earned: row[6],
      skills: row[7], available: row[8], lastProject: row[9], overview: row[10], color: COLORS[i % COLORS.length],
    };
  }

  // Past and current contracts (the Hires page); Rehire opens an offer to the same person.
  const CONTRACTS = [
    { freelancerId: "alexrodriguez", title: "Mobile App Developer for Fitness Tracker", status: "Active", start: "Jul 12, 2024", end: "", rating: null },
    { freelancerId: "danielgarcia", title: "Project Manager for Website Relaunch", status: "Completed", start: "Feb 5, 2024", end: "May 24, 2024", rating: 5 },
    { freelancerId: "natalieross", title: "QA Testing for Website Relaunch", status: "Completed", start: "Apr 1, 2024", end: "May 20, 2024", rating: 5 },
    { freelancerId: "oliviabrown", title: "Social Media Graphics Pack", status: "Completed", start: "Jan 8, 2024", end: "Jan 30, 2024", rating: 4 },
  ];

  function app(id, bid, letter) {
    return { freelancerId: id, bid: bid, coverLetter: letter, submitted: "Jul 13, 2024" };
  }
  function job(id, title, category, skills, from, to, size, time, level, hire, posted, description, applications) {
    return {
      id: id, title: title, description: description, category: category, skills: skills,
      hourlyRateFrom: from, hourlyRateTo: to, estimateSize: size, estimateTime: time,
      estimateLevelExperience: level, estimateHireOpportunity: hire, status: "published",
      postedDate: posted, applications: applications,
    };
  }
  function jobs() {
    return [
      job("job-1", "Full-Stack Developer for Fitness Tracking App", "Web Development", ["React", "Node.js", "TypeScript", "MongoDB"], 40, 70,
        "medium", "3 to 6 months", "intermediate", "yes", "2024-07-10",
        "We are building a web and mobile fitness tracking app where members log workouts, follow plans and chat with coaches. You will build the React front end and the Node.js API.",
        [app("ashleycampbell", 65, "I have built the backend of a social platform with a million users and would love to build your API."),
          app("brandonmartinez", 68, "Fitness apps are my favourite kind of project: I shipped a meal planning app last year with the same stack."),
          app("jameswilson", 60, "I can start right away and have shipped several React apps end to end.")]),
      job("job-2", "Data Analyst for Sales Dashboard", "Data Science & Analytics", ["SQL", "Tableau", "Excel"], 35, 55,
        "small", "1 to 3 months", "intermediate", "no", "2024-07-08",
        "Build a sales dashboard from our membership and class booking data, with weekly data analysis of trends by studio.",
        [app("emilychen", 72, "I build Tableau dashboards every week and can have a first version ready in days."),
          app("kevinwright", 55, "I combine finance and data analysis: happy to add revenue forecasts to the dashboard.")]),
      job("job-3", "Machine Learning Engineer for Workout Recommendations", "Data Science & Analytics", ["Python", "TensorFlow", "scikit-learn"], 70, 100,
        "large", "More than 6 months", "expert", "yes", "2024-07-05",
        "Train a model that recommends the next workout from each member's history, ratings and goals.",
        [app("priyapatel", 90, "Recommendation systems are my specialty; I built one for a large e-commerce store."),
          app("emilychen", 80, "I would start with a strong baseline and iterate on it with your members' feedback.")]),
      job("job-4", "Mobile App Developer (React Native)", "Mobile Development", ["React Native", "iOS", "Android"], 45, 75,
        "medium", "3 to 6 months", "intermediate", "no", "2024-07-03",
        "Turn our fitness tracking web app into iOS and Android apps with push notifications and offline workouts.",
        [app("ryanmurphy", 68, "I build native iOS apps and React Native apps, and I love fitness products.")]),
      job("job-5", "Logo and Brand Identity Designer", "Design & Creative", ["Adobe Illustrator", "Branding", "Logo Design"], 30, 50,
        "small", "1 to 3 months", "entry", "no", "2024-06-28",
        "Design a logo, color palette and simple brand guide for our new fitness app.",
        [app("oliviabrown", 45, "Branding for health and wellness companies is what I do best."),
          app("davidkim", 50, "I can design the logo together with the app icon so they match.")]),
      job("job-6", "SEO Content Writer for Fitness Blog", "Writing", ["SEO Writing", "Copywriting", "WordPress"], 25, 40,
        "small", "1 to 3 months", "entry", "no", "2024-06-25",
        "Write eight articles a month about training, recovery and healthy habits for our blog.",
        [app("laurabennett", 40, "I write conversion-focused copy for fitness brands and can start next week."),
          app("jessicalee", 35, "I have written over a hundred fitness and nutrition articles.")]),
    ];
  }

  function msg(author, text, date) {
    return { author: author, message: text, date: date, type: "text" };
  }
  function contact(id, name, job, unread, messages) {
    const byIndex = {};
    messages.forEach(function (m, i) { byIndex[String(i)] = m; });
    const last = messages[messages.length - 1];
    return {
      id: id, name: name, job: job, lastMessage: last.message, lastMessageAuthor: last.author,
      lastMessageDate: last.date, unread: unread, messages: byIndex,
    };
  }
  function contacts() {
    const me = "Sarah Johnson";
    return [
      contact("alexrodriguez", "Alex Rodriguez", "Mobile App Developer", true, [
        msg(me, "Welcome aboard, Alex! Your contract for the fitness tracker app is active now.", "2024-07-12T16:05"),
        msg("Alex Rodriguez", "Thank you, Sarah! I'm excited to start. I haven't used your repository or the test devices yet. Would you be open to helping me get set up?", "2024-07-15T09:12")]),
      contact("laurabennett", "Laura Bennett", "Copywriter", true, [
        msg(me, "Hi Laura, thanks for your proposal for the fitness blog.", "2024-07-13T11:40"),
        msg("Laura Bennett", "Thanks for reaching out! How soon would you need the first article draft?", "2024-07-14T18:22")]),
      contact("ryanmurphy", "Ryan Murphy", "iOS Developer", true, [
        msg("Ryan Murphy", "Hi Sarah, I applied to your React Native posting. When would be a good time for a quick intro call?", "2024-07-14T10:03")]),
      contact("danielgarcia", "Daniel Garcia", "Project Manager", false, [
        msg(me, "Thanks again for running the website relaunch, Daniel. Everything went smoothly.", "2024-05-24T15:30"),
        msg("Daniel Garcia", "It was a pleasure, Sarah. Let me know whenever you need help on another project.", "2024-05-24T16:02")]),
      contact("oliviabrown", "Olivia Brown", "Graphic Designer", false, [
        msg("Olivia Brown", "I sent over the final graphics pack. Thanks for the kind review!", "2024-01-30T12:15"),
        msg(me, "They look great, thank you Olivia!", "2024-01-30T13:01")]),
    ];
  }

  function byId(list) {
    const out = {};
    list.forEach(function (x) { out[x.id] = x; });
    return out;
  }

  HALO.defineSite({
    site: "topwork",
    collections: { jobs: "jobs.jobs", contacts: "messages.contactList", offers: "offers.offers" },
    me: { name: "Sarah Johnson", company: "Johnson Fitness Labs" },
    talent: TALENT.map(person),
    extraTalent: EXTRA_TALENT.map(function (row, i) { return person(row, i + TALENT.length); }),
    contracts: CONTRACTS,
    initialState: function () {
      return {
        jobs: { jobs: byId(jobs()) },
        messages: { contactList: byId(contacts()) },
        offers: { offers: {} },
        saved: { savedFreelancerIds: [] },
      };
    },
    initialView: function () {
      return { route: null, modal: null, form: null, snackbar: "" };
    },
  });
})();
