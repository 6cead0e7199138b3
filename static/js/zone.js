// The browser's time zone in the `tz` cookie, for pages that show "today" (memory/web/zone.py). When the page
// was drawn in another zone it is drawn again, once per tab, so a blocked cookie cannot loop. Zone names
// ("America/Argentina/Buenos_Aires", "Etc/GMT+3") are cookie-safe as they are; Django reads them verbatim.
(function () {
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  var drawn = document.querySelector("[data-zone]");
  if (!zone || !drawn || drawn.getAttribute("data-zone") === zone) return;
  document.cookie = "tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax";
  if (sessionStorage.getItem("tz-redrawn") === zone) return;
  sessionStorage.setItem("tz-redrawn", zone);
  location.reload();
})();
