/* A submission's page, live: polls its status.json every 2 s and updates the jobs' cells in place,
   the whole submission's time left, and, once it finishes, draws its scores (HTML the server rendered).
   The flash "Submitted: N jobs are queued" is removed once a job has left the queue.

   It stops once the submission has finished, waits longer after each failed poll (up to a minute),
   skips polls while the tab is hidden, and announces each job's change of state to screen readers.
   The cells are written as the server writes them (submissions/templatetags/submission_format.py). */
(function () {
  "use strict";

  var root = document.getElementById("submission");
  if (!root) return;
  var KINDS = { pretrain: "pretraining", finetune: "fine-tuning", aggregate: "scoring", fetch: "fetching from the Hub" };
  var DASH = "\u2014";
  var interval = Number(root.dataset.interval) || 2000;
  var delay = interval;
  var finished = root.dataset.finished === "1";
  var announce = document.getElementById("announce");
  var note = document.getElementById("live-note");

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return DASH;
    var whole = Math.max(0, Math.floor(seconds + 0.5));
    if (whole < 60) return whole + " s";
    if (whole < 3600) return Math.floor(whole / 60) + " min";
    if (whole < 2 * 86400) return Math.floor(whole / 3600) + " h " + Math.floor((whole % 3600) / 60) + " min";
    return Math.floor(whole / 86400) + " d " + Math.floor((whole % 86400) / 3600) + " h";
  }

  function percent(progress) {
    return progress === null || progress === undefined ? DASH : Math.floor(progress * 100) + "%";
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function clock(iso) {
    if (!iso) return DASH;
    var moment = new Date(iso);
    var today = new Date();
    var time = pad(moment.getUTCHours()) + ":" + pad(moment.getUTCMinutes()) + " UTC";
    if (moment.toISOString().slice(0, 10) === today.toISOString().slice(0, 10)) return time;
    return moment.toISOString().slice(0, 10) + " " + time;
  }

  function place(job) {
    if (job.queue_position === null || job.queue_position === undefined) return DASH;
    var where = "#" + job.queue_position + " in the " + job.queue_name + " queue";
    return job.estimated_start ? where + ", starts about " + clock(job.estimated_start) : where;
  }

  function set(row, field, text) {
    var cell = row.querySelector('[data-field="' + field + '"]');
    if (cell && cell.textContent !== text) cell.textContent = text;
  }

  function say(words) {
    announce.textContent = words;
  }

  function updateJob(job) {
    var row = root.querySelector('tr[data-job="' + job.id + '"]');
    if (!row) return;
    if (row.dataset.status !== job.status) {
      say((job.dataset ? job.dataset + ", " : "") + (KINDS[job.kind] || job.kind) + ": " + job.status_label);
      row.dataset.status = job.status;
    }
    set(row, "status_label", job.status_label);
    set(row, "waiting_reason", job.waiting_reason);
    var bar = row.querySelector("progress");
    if (bar) bar.value = job.progress === null ? 0 : Math.floor(job.progress * 100);
    set(row, "percent", percent(job.progress));
    set(row, "steps", job.steps_text || "");
    set(row, "eta", job.eta_text === undefined ? duration(job.eta_s) : job.eta_text);
    set(row, "place", place(job));
    set(row, "heartbeat", job.heartbeat_age_s === null ? "never" : duration(job.heartbeat_age_s) + " ago");
    set(row, "attempts", job.attempts + " of " + job.max_attempts);
    var failure = root.querySelector('tr[data-failure-for="' + job.id + '"]');
    if (failure) {
      failure.hidden = job.status !== "failed";
      set(failure, "failure", job.failure);
      set(failure, "refunded", job.refund);  // the refund rule's own words (submissions/refunds.py)
      if (job.log_tail) set(failure, "log_tail", job.log_tail);
    }
  }

  function apply(data) {
    var status = document.getElementById("submission-status");
    if (status.textContent !== data.status_text) {
      status.textContent = data.status_text;
      say("The submission is " + data.status_text + ".");
    }
    data.jobs.forEach(updateJob);
    if (data.overall) {
      var overall = document.getElementById("overall-eta");
      if (overall && overall.textContent !== data.overall.text) overall.textContent = data.overall.text;
    }
    dropStaleMessages(data.jobs);
    if (data.finished && data.results_html) {
      var results = document.getElementById("results");
      if (results && !results.dataset.drawn) {
        results.innerHTML = data.results_html;  // rendered and escaped by the server's template
        results.dataset.drawn = "1";
        say("Finished: the scores are shown under Results.");
      }
    }
    var visibility = document.getElementById("visibility");
    var isPublic = data.visibility === "public";
    if (visibility && visibility.dataset.public !== (isPublic ? "1" : "0")) {
      visibility.dataset.public = isPublic ? "1" : "0";
      visibility.textContent = isPublic
        ? "public: on the leaderboard and its pages"
        : "private: shown only to its owner and the site's staff";
    }
    if (data.finished) {
      finished = true;
      root.querySelectorAll("[data-when-finished]").forEach(function (el) { el.hidden = false; });
      root.querySelectorAll("[data-while-unfinished]").forEach(function (el) { el.hidden = true; });
      note.textContent = "";
    }
  }

  // "Submitted: 12 jobs are queued" holds until a job leaves the queue; then it goes.
  function dropStaleMessages(jobs) {
    var started = jobs.some(function (job) { return job.status !== "queued" && job.status !== "retrying"; });
    if (!started) return;
    document.querySelectorAll(".message.while-queued").forEach(function (message) {
      var box = message.parentNode;
      box.removeChild(message);
      if (box && !box.querySelector(".message")) box.hidden = true;
    });
  }

  function poll() {
    if (finished) return;
    if (document.hidden) { schedule(interval); return; }
    fetch(root.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 404) {
          finished = true;
          note.textContent = "Live updates stopped: this submission is no longer shown to you.";
          return null;
        }
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        if (data === null) return;
        apply(data);
        if (delay !== interval) note.textContent = "This page updates itself every " + interval / 1000 + " seconds while jobs run.";
        delay = interval;
        schedule(delay);
      })
      .catch(function () {
        delay = Math.min(delay * 2, 60000);
        note.textContent = "The server did not answer; trying again in " + Math.round(delay / 1000) + " s.";
        schedule(delay);
      });
  }

  function schedule(ms) {
    if (!finished) window.setTimeout(poll, ms);
  }

  root.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });

  dropStaleMessages(Array.prototype.map.call(root.querySelectorAll("tr[data-job]"), function (row) {
    return { status: row.dataset.status };
  }));
  if (root.dataset.finished === "1") {
    var drawn = document.getElementById("results");
    if (drawn) drawn.dataset.drawn = "1";
  }
  schedule(interval);
})();
