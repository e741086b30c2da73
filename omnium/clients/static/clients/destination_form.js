// The destination form (templates/admin/clients/destination/change_form.html): shows only the
// chosen kind's settings, adds "Generate" beside a webhook secret and "Fetch host key" beside an
// SFTP host key. A file of its own, so that the admin's Content-Security-Policy allows no inline
// script; the one address it needs comes from its script tag.
(function () {
  "use strict";
  const fetchHostKeyUrl = document.currentScript.dataset.fetchHostKeyUrl;
  const form = document.getElementById("destination_form");
  const kind = document.getElementById("id_kind");
  if (!form || !kind) { return; }

  function showChosenKind() {
    form.querySelectorAll("fieldset.transport-settings").forEach(function (fieldset) {
      fieldset.hidden = !fieldset.classList.contains("transport-" + kind.value);
    });
  }
  kind.addEventListener("change", showChosenKind);
  showChosenKind();

  function button(text, after) {
    const made = document.createElement("button");
    made.type = "button"; made.className = "button"; made.textContent = text;
    made.style.marginLeft = "8px";
    after.insertAdjacentElement("afterend", made);
    return made;
  }
  function cell(row, text, className) {
    const td = row.insertCell(); td.textContent = text; if (className) { td.className = className; }
  }

  const secret = document.getElementById("id_webhook__cred__secret");
  if (secret) {
    button("Generate", secret).addEventListener("click", function () {
      const bytes = crypto.getRandomValues(new Uint8Array(24));
      secret.value = "whsec_" + btoa(String.fromCharCode.apply(null, bytes));
      secret.type = "text";  // shown this once, to copy to the receiver; the server never shows it back
    });
  }

  const hostKey = document.getElementById("id_sftp__host_key");
  if (!hostKey) { return; }
  const offer = document.createElement("div");
  offer.className = "host-key-offer"; offer.hidden = true; offer.id = "host-key-offer";
  const fetchButton = button("Fetch host key", hostKey);
  fetchButton.id = "fetch-host-key";
  fetchButton.insertAdjacentElement("afterend", offer);

  function showOffer(found) {
    offer.replaceChildren(); offer.hidden = false;
    const table = document.createElement("table");
    if (found.pinned_fingerprint) {
      const pinned = table.insertRow(); cell(pinned, "pinned now"); cell(pinned, found.pinned_fingerprint);
    }
    const offered = table.insertRow(); cell(offered, "the server offers");
    cell(offered, found.fingerprint, found.changed ? "changed" : "");
    offer.appendChild(table);
    const note = document.createElement("p");
    note.textContent = found.changed ? "The server's key has changed. Pin the new key only if its owner confirms the change."
      : (found.pinned_fingerprint ? "This is the key pinned now." : "Compare the fingerprint with the one the server's owner gives you.");
    offer.appendChild(note);
    if (found.pinned_fingerprint && !found.changed) { return; }
    const pinButtons = [];
    function pinButton(id, text, field, pinned) {
      const made = document.createElement("button");
      made.type = "button"; made.className = "button"; made.id = id; made.textContent = text;
      made.addEventListener("click", function () {
        field.value = found.key;
        note.textContent = "Pinned " + found.fingerprint + pinned + ": save the destination to keep it.";
        pinButtons.forEach(function (each) { each.remove(); });
      });
      pinButtons.push(made);
      offer.appendChild(made);
    }
    pinButton("confirm-host-key", "Confirm and pin this key", hostKey, "");
    // A server rotating its key: pin the new one beside the old, both accepted until one goes.
    const nextKey = document.getElementById("id_sftp__next_host_key");
    if (found.changed && nextKey) {
      pinButton("confirm-next-host-key", "Confirm and pin as the next key (both accepted)", nextKey,
                " beside the current key");
    }
  }

  fetchButton.addEventListener("click", function () {
    const body = new FormData();
    body.append("csrfmiddlewaretoken", form.querySelector("[name=csrfmiddlewaretoken]").value);
    body.append("host", document.getElementById("id_sftp__host").value);
    body.append("port", document.getElementById("id_sftp__port").value);
    body.append("pinned", hostKey.value);
    fetchButton.disabled = true;
    offer.hidden = false; offer.textContent = "Asking the server for its key…";
    fetch(fetchHostKeyUrl, {method: "POST", body: body, credentials: "same-origin"})
      .then(function (reply) { return reply.json(); })
      .then(function (asked) { return asked.status_url ? outcomeOf(asked.status_url, 0) : asked; })
      .then(function (found) {
        if (found.error || !found.ok) {
          offer.hidden = false;
          offer.textContent = (found.error || found.plain) + (found.detail ? " (" + found.detail + ")" : "");
        } else { showOffer(found); }
      })
      .finally(function () { fetchButton.disabled = false; });
  });

  // A delivery worker fetches the key (never the web server): ask for its outcome until it has one.
  function outcomeOf(url, asked) {
    return fetch(url, {credentials: "same-origin"}).then(function (reply) { return reply.json(); })
      .then(function (probe) {
        if (!probe.waiting) { return probe; }
        if (asked > 240) { return {error: "No answer yet: no delivery worker has run the fetch. Try again later."}; }
        return new Promise(function (resolve) { setTimeout(resolve, 500); })
          .then(function () { return outcomeOf(url, asked + 1); });
      });
  }
})();
