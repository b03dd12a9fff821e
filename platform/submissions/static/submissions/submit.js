/* The submission form: shows only the chosen source's and benchmark's fields, refuses a checkpoint that is
   too large before sending it, and sends the form itself so that the upload's progress can be shown. A base
   model typed sets "Pretraining started" to continual when it was left unstated.

   Without this script the form still works: every field is shown and the browser posts it. With it, the
   server is asked with X-Requested-With: XMLHttpRequest and answers either {"location": url} (go there) or
   the form page again, with the refusals beside their fields, which replaces this page's body. */
(function () {
  "use strict";

  var MB = 1000 * 1000;

  function init() {
    var form = document.getElementById("submission-form");
    if (!form || form.dataset.ready === "1") return;
    form.dataset.ready = "1";
    var benchmark = form.querySelector('select[name="benchmark"]');

    function showSource() {
      var chosen = form.querySelector('input[name="source"]:checked');
      form.querySelectorAll("fieldset[data-source]").forEach(function (group) {
        var off = chosen !== null && group.dataset.source !== chosen.value;
        group.hidden = off;
        group.disabled = off; // a hidden source's file is not sent
      });
    }

    function showDatasets() {
      form.querySelectorAll("fieldset[data-benchmark]").forEach(function (group) {
        var off = benchmark !== null && group.dataset.benchmark !== benchmark.value;
        group.hidden = off;
        group.disabled = off;
      });
    }

    form.querySelectorAll('input[name="source"]').forEach(function (radio) {
      radio.addEventListener("change", showSource);
    });
    if (benchmark) benchmark.addEventListener("change", showDatasets);
    showSource();
    showDatasets();
    followBaseModel(form);
    followHubCard(form);
    form.addEventListener("submit", send);

    var summary = document.getElementById("error-summary");
    if (summary) summary.focus();
  }

  function fieldError(input, sentence) {
    var id = "err-" + input.name;
    var note = document.getElementById(id);
    if (!note) {
      note = document.createElement("p");
      note.className = "field-error errorlist";
      note.id = id;
      input.insertAdjacentElement("afterend", note);
      input.setAttribute("aria-describedby", ((input.getAttribute("aria-describedby") || "") + " " + id).trim());
    }
    note.textContent = sentence;
    input.setAttribute("aria-invalid", "true");
    input.focus();
  }

  function tooLarge(form) {
    var inputs = form.querySelectorAll("input[type=file][data-max-bytes]");
    for (var i = 0; i < inputs.length; i++) {
      var input = inputs[i];
      var file = input.files && input.files[0];
      if (!input.disabled && file && file.size > Number(input.dataset.maxBytes)) {
        var sentence = input.dataset.tooLarge.replace("{name}", file.name);
        fieldError(input, sentence);
        return true;
      }
    }
    return false;
  }

  function send(event) {
    var form = event.target;
    if (!window.FormData || !window.XMLHttpRequest) return; // the browser posts the form itself
    event.preventDefault();
    if (tooLarge(form)) return;
    var button = document.getElementById("submit-button");
    var box = document.getElementById("upload-progress");
    var bar = document.getElementById("upload-bar");
    var text = document.getElementById("upload-text");
    var announce = document.getElementById("upload-announce");
    var announced = -1;

    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
    xhr.upload.addEventListener("progress", function (e) {
      if (!e.lengthComputable) return;
      var percent = Math.floor((100 * e.loaded) / e.total);
      bar.value = percent;
      text.textContent = "Sending: " + percent + "% (" + (e.loaded / MB).toFixed(1) + " of " +
        (e.total / MB).toFixed(1) + " MB sent)";
      var tenth = Math.floor(percent / 10);
      if (tenth !== announced) { // a screen reader hears every tenth, not every chunk
        announced = tenth;
        announce.textContent = percent + "% sent";
      }
    });
    xhr.upload.addEventListener("load", function () {
      bar.value = 100;
      text.textContent = "Sent. Checking the submission (a large checkpoint takes a minute)…";
      announce.textContent = text.textContent;
    });
    xhr.addEventListener("load", function () { answered(xhr); });
    xhr.addEventListener("error", function () { broken(button, text, announce); });
    xhr.addEventListener("abort", function () { broken(button, text, announce); });
    button.disabled = true;
    box.hidden = false;
    text.textContent = "Sending…";
    xhr.send(new FormData(form));
  }

  function answered(xhr) {
    var type = xhr.getResponseHeader("Content-Type") || "";
    if (type.indexOf("application/json") === 0) {
      var answer = JSON.parse(xhr.responseText);
      if (answer.location) {
        window.location.assign(answer.location);
        return;
      }
    }
    if (xhr.responseURL && xhr.responseURL.split("#")[0] !== new URL(document.getElementById("submission-form").action, document.baseURI).href) {
      window.location.assign(xhr.responseURL); // redirected elsewhere, to sign in for instance
      return;
    }
    var page = new DOMParser().parseFromString(xhr.responseText, "text/html");
    document.title = page.title;
    document.body.replaceWith(document.adoptNode(page.body));
    init();
    window.scrollTo(0, 0);
  }

  // Naming a base model says the pretraining continued from it: "Pretraining started" follows, unless stated.
  function followBaseModel(form) {
    var base = form.querySelector('input[name="base_model"]');
    var start = form.querySelector('select[name="initialisation"]');
    if (!base || !start) return;
    base.addEventListener("change", function () {
      if (base.value.trim() && start.value === "") start.value = "continual";
    });
  }

  // A Hub id typed: the Hub's card pre-fills the name, licence and base model left empty, and says what it found.
  function followHubCard(form) {
    var hub = form.querySelector('input[name="hub"]');
    var found = document.getElementById("hub-found");
    if (!hub || !found || !window.fetch) return;
    hub.addEventListener("change", function () {
      var id = hub.value.trim();
      found.textContent = id ? "Asking the Hub about " + id + "…" : "";
      if (!id) return;
      fetch(hub.dataset.cardUrl + "?id=" + encodeURIComponent(id), { credentials: "same-origin" })
        .then(function (response) { return response.json(); })
        .then(function (card) {
          if (hub.value.trim() !== id) return; // typed on since
          if (card.error) {
            found.textContent = card.error;
            return;
          }
          fillIfEmpty(form, "name", card.name);
          fillIfEmpty(form, "licence", card.licence);
          fillIfEmpty(form, "base_model", card.base_model);
          found.textContent = card.repository + " at commit " + card.commit.slice(0, 12) + ": " + card.files +
            " files to fetch (" + (card.bytes / MB).toFixed(1) + " MB)" + (card.gated ? "; gated: give your Hub token" : "") +
            (card.licence ? "; licence " + card.licence : "") + ".";
        })
        .catch(function () { found.textContent = ""; });
    });
  }

  function fillIfEmpty(form, name, value) {
    var input = form.querySelector('[name="' + name + '"]');
    if (input && value && !input.value.trim()) {
      input.value = value;
      input.dispatchEvent(new Event("change"));
    }
  }

  function broken(button, text, announce) {
    button.disabled = false;
    text.textContent = "The upload broke off before the server answered. Nothing was queued; send the form again.";
    announce.textContent = text.textContent;
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
