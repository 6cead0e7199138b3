/* On a phone the page links are one strip that scrolls sideways: keep the current page's link in view. */
(function () {
  "use strict";
  var nav = document.querySelector("nav.pages");
  var current = nav && nav.querySelector("[aria-current=page]");
  if (!current) return;
  function centre() {
    if (nav.scrollWidth <= nav.clientWidth) return;
    nav.scrollLeft = current.offsetLeft - nav.offsetLeft - (nav.clientWidth - current.offsetWidth) / 2;
  }
  centre();
  window.addEventListener("resize", centre);
})();
