// The upload page: files dropped or chosen are sent one request each to POST /api/documents
// with the token typed in, and each one's state is followed until it is done (then linked).
"use strict";
(function () {
  const zone = document.getElementById("drop-zone");
  const input = document.getElementById("files");
  const token = document.getElementById("token");
  const list = document.getElementById("uploads");
  const problem = document.getElementById("upload-problem");
  const FINAL = new Set(["done", "failed"]);
  token.value = sessionStorage.getItem("bucketdigest-upload-token") || "";

  function say(text) {
    problem.textContent = text;
    problem.hidden = !text;
  }

  function entry(name) {
    const item = document.createElement("li");
    const label = document.createElement("span");
    label.className = "name";
    label.textContent = name;
    const state = document.createElement("span");
    state.className = "state muted";
    item.append(label, " ", state);
    list.prepend(item);
    return { item, label, state };
  }

  function show(row, state, text) {
    row.item.dataset.state = state;
    row.state.textContent = text || state;
    row.state.className = "state " + (state === "done" || state === "failed" ? state : "muted");
  }

  function link(row, page) {
    const anchor = document.createElement("a");
    anchor.href = page;
    anchor.textContent = row.label.textContent;
    row.label.replaceChildren(anchor);
  }

  async function follow(row, sent) {
    while (true) {
      const answer = await fetch(sent.url, { headers: { Authorization: "Bearer " + token.value } });
      if (answer.ok) {
        const seen = await answer.json();
        const words = { todo: "queued", processing: "processing", done: "done", failed: "failed" };
        show(row, seen.state, seen.state === "failed" ? "failed: " + (seen.error || "").split("\n")[0] : words[seen.state]);
        if (FINAL.has(seen.state)) {
          link(row, sent.page);
          return;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }

  function send(file) {
    const row = entry(file.name);
    show(row, "sending", "sending…");
    const body = new FormData();
    body.append("files", file, file.name);
    const request = new XMLHttpRequest();
    request.open("POST", "/api/documents");
    request.setRequestHeader("Authorization", "Bearer " + token.value);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) show(row, "sending", "sending " + Math.round((100 * event.loaded) / event.total) + "%");
    };
    request.onload = () => {
      let answer = {};
      try { answer = JSON.parse(request.responseText); } catch (error) { answer = {}; }
      if (request.status !== 202) {
        show(row, "failed", "refused: " + (answer.detail || request.status));
        return;
      }
      const sent = answer.documents[0];
      row.item.dataset.digest = sent.digest;
      follow(row, sent);
    };
    request.onerror = () => show(row, "failed", "the server could not be reached");
    request.send(body);
  }

  function take(files) {
    if (!token.value) {
      say("Give a token that may upload first (bucketdigest tokens add NAME --scope upload).");
      token.focus();
      return;
    }
    say("");
    sessionStorage.setItem("bucketdigest-upload-token", token.value);
    Array.from(files).forEach(send);
  }

  input.addEventListener("change", () => { take(input.files); input.value = ""; });
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    take(event.dataTransfer.files);
  });
})();
