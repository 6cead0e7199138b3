/* "Copy" buttons: each element marked [data-copy] gets a button that puts its text on the clipboard. Without
   script (or clipboard access) the text is still selectable by hand. No build step, no dependencies. */
(function () {
  "use strict";
  function copied(button, text) {
    button.textContent = text;
    setTimeout(function () { button.textContent = "Copy"; }, 2000);
  }
  document.querySelectorAll("[data-copy]").forEach(function (block) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "secondary copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy " + (block.getAttribute("data-copy") || "this"));
    button.addEventListener("click", function () {
      var text = block.textContent;
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { copied(button, "Copied"); },
          function () { copied(button, "Select and copy by hand"); });
      } else {
        var range = document.createRange();
        range.selectNodeContents(block);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        copied(button, document.execCommand && document.execCommand("copy") ? "Copied" : "Selected: press Ctrl+C");
      }
    });
    block.insertAdjacentElement("afterend", button);
  });
})();
