/* "Copy for your model card" (templates/leaderboard/model.html): each button copies the text of the block
 * its data-copy names to the clipboard and says so, on the button and to a screen reader (#copy-status).
 * Where the clipboard cannot be written (an address that is not a secure context, a refused permission),
 * the block's text is selected instead and the button says to press Ctrl+C, so nothing is lost. Without
 * JavaScript the blocks are plain text to select by hand.
 */
(function () {
  "use strict";

  function say(button, words) {
    var status = document.getElementById("copy-status");
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    button.textContent = words;
    if (status) {
      status.textContent = words;
    }
    window.setTimeout(function () {
      button.textContent = label;
    }, 4000);
  }

  function select(block) {
    var range = document.createRange();
    range.selectNodeContents(block);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var block = document.getElementById(button.getAttribute("data-copy"));
      if (!block) {
        return;
      }
      var text = block.textContent;
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(
          function () {
            say(button, "Copied");
          },
          function () {
            select(block);
            say(button, "Selected: press Ctrl+C to copy");
          }
        );
      } else {
        select(block);
        say(button, "Selected: press Ctrl+C to copy");
      }
    });
  });
})();
