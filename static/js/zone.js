// The browser's time zone in the `tz` cookie, on every page, for pages that show "today" (memory/web/zone.py).
// When such a page was drawn in another zone (and the person did not choose one) it is drawn again, once per
// tab, so a blocked cookie cannot loop. Zone names
// ("America/Argentina/Buenos_Aires", "Etc/GMT+3") are cookie-safe as they are; Django reads them verbatim.
(function () {
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!zone) return;
  if (document.cookie.indexOf("tz=" + zone) < 0) {
    document.cookie = "tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax";
  }
  var drawn = document.querySelector("[data-zone]"); // a page that shows "today" says which zone it used
  if (!drawn || drawn.getAttribute("data-zone") === zone || drawn.hasAttribute("data-zone-chosen")) return;
  if (sessionStorage.getItem("tz-redrawn") === zone) return;
  sessionStorage.setItem("tz-redrawn", zone);
  location.reload();
})();
