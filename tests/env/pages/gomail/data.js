// A tiny stand-in for REAL's GoMail clone: the same /config and /finish protocol, state in localStorage.
const GOMAIL_INITIAL = {
  email: {
    emails: {
      '1': {id: '1', from: 'John Doe', subject: 'Lunch on Friday?', isRead: false, trash: false},
      '2': {id: '2', from: 'Amazon', subject: 'Your order has shipped', isRead: false, trash: false},
      '3': {id: '3', from: 'Jane Roe', subject: 'Quarterly report', isRead: true, trash: false},
    },
  },
  ui: {snackbar: {message: ''}},
};
const STATE_KEY = 'gomail_state';
const INITIAL_KEY = 'gomail_initial';
const load = (key) => JSON.parse(localStorage.getItem(key) || 'null');

function diffState(initial, current) {
  // REAL's /finish layout: initialfinaldiff {added, updated, deleted} keyed by state path, and
  // `differences` per collection.
  const updatedEmails = {};
  const updatedList = [];
  for (const [id, now] of Object.entries(current.email.emails)) {
    const before = initial.email.emails[id] || {};
    const changes = {};
    for (const [k, v] of Object.entries(now)) if (before[k] !== v) changes[k] = v;
    if (Object.keys(changes).length) {
      updatedEmails[id] = changes;
      updatedList.push({id, ...changes});
    }
  }
  const updated = {};
  if (Object.keys(updatedEmails).length) updated.email = {emails: updatedEmails};
  if (current.ui.snackbar.message !== initial.ui.snackbar.message) updated.ui = {snackbar: {message: current.ui.snackbar.message}};
  return {
    initialfinaldiff: {added: {}, updated, deleted: {}},
    differences: {emails: {added: [], updated: updatedList, deleted: []}},
  };
}
