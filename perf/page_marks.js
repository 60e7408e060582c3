// Marks for perf.page, added by Playwright before the page's own scripts run: the times
// (performance.now(), ms from the navigation's start) at which the page became usable, kept in
// window.__pageMarks. A MutationObserver and event listeners set them; nothing polls.
//   dcl        DOMContentLoaded ended (Navigation Timing)
//   login      the login form usable: the key box focused, its button enabled
//   submitted  the login form sent
//   ready      the ask view interactive: the question box and the Ask button enabled
//   asked      Enter pressed in the question box
//   answer     an answer card shown after that
(() => {
  const marks = {};
  Object.defineProperty(marks, "dcl", {
    enumerable: true,
    get: () => performance.getEntriesByType("navigation")[0]?.domContentLoadedEventEnd || undefined,
  });
  window.__pageMarks = marks;
  let stale = null;
  const once = (name) => { if (!(name in marks)) marks[name] = performance.now(); };
  const usable = (element) => Boolean(element && element.isConnected && !element.disabled
    && element.getClientRects().length > 0);

  function check() {
    const key = document.getElementById("api-key");
    if (usable(key) && document.activeElement === key
      && usable(document.querySelector("form.login button[type=submit]"))) once("login");
    if (usable(document.querySelector("[data-testid=question]"))
      && usable(document.querySelector("[data-testid=ask]"))) once("ready");
    if ("asked" in marks) {
      const answer = document.querySelector("[data-testid=answer]");
      if (answer && answer !== stale) once("answer");
    }
  }

  new MutationObserver(check).observe(document, {
    childList: true, subtree: true, attributes: true, attributeFilter: ["disabled", "hidden", "class"],
  });
  document.addEventListener("focusin", check, true);
  document.addEventListener("submit", (event) => {
    if (event.target.matches("form.login")) once("submitted");
  }, true);
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || !event.target.matches("[data-testid=question]")) return;
    stale = document.querySelector("[data-testid=answer]");
    delete marks.answer;
    marks.asked = performance.now();
  }, true);
})();
