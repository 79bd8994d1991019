// The planner service's dashboard: a static page over the service's own REST API (no build step,
// nothing loaded from elsewhere). It polls GET /state, refetches /load and /proposals when the
// model or the proposal changes, and sends the actions as the API's POSTs, behind a confirmation
// for anything that moves data. Every number shown is the API's, never computed twice here.
"use strict";

const POLL_MS = 2000;  // how often /state is read: an execution's progress moves at this pace
const $ = (id) => document.getElementById(id);
let lastModel = null, lastProposal = null, proposal = null, load = null, state = null;
let reviewed = null;  // the last dry run with something to execute, other than the cached rebalance:
                     // {endpoint, id, label}, executable as reviewed (by its proposal_id)
const LISTED = 10;  // topics, partitions or warnings named in an action's result, at most

function bytes(n) {
  if (n === null || n === undefined) return "unknown";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = n, i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

function duration(s) {
  if (s === null || s === undefined) return "unknown";
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return `${h}:${String(m).padStart(2, "0")}:${String(r).padStart(2, "0")}`;
}

function when(ms) { return ms ? new Date(ms).toLocaleString() : ""; }

async function api(method, path) {
  const answer = await fetch(path, {method, credentials: "same-origin", headers: {"Accept": "application/json"}});
  let body = null;
  try { body = await answer.json(); } catch (e) { body = null; }
  if (!answer.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${answer.status}`;
    const err = new Error(`${method} ${path}: ${answer.status} ${message}`);
    err.status = answer.status;
    throw err;
  }
  return body;
}

function showError(text) {
  const e = $("error");
  e.textContent = text || "";
  e.hidden = !text;
}

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

// A cell with the value now and after the proposal, each with a bar scaled to `top`.
function barCell(row, now, after, top, fmt) {
  const td = row.insertCell();
  td.className = "bars";
  for (const [value, cls] of [[now, "now"], [after, "after"]]) {
    if (value === null || value === undefined) continue;
    const line = document.createElement("div");
    line.className = `bar-line ${cls}`;
    const track = document.createElement("span");
    track.className = "track";
    const bar = document.createElement("span");
    bar.className = "bar";
    bar.style.width = `${top > 0 ? Math.max(0, (100 * value) / top) : 0}%`;
    track.append(bar);
    const label = document.createElement("span");
    label.className = "bar-label";
    label.textContent = fmt(value);
    line.append(track, label);
    td.append(line);
  }
  return td;
}

function renderBrokers() {
  const body = $("brokers").tBodies[0];
  body.replaceChildren();
  if (!load) return;
  const after = new Map();
  if (proposal && proposal.report) for (const b of proposal.report.per_broker) after.set(b.broker, b);
  const rows = [...load.brokers].sort((a, b) => a.broker - b.broker);
  const top = (key, akey) => Math.max(1, ...rows.map((r) => r[key]), ...[...after.values()].map((b) => b[akey] || 0));
  const topR = top("replicas", "replicas_after"), topL = top("leaders", "leaders_after"), topB = top("bytes", "bytes_after");
  for (const r of rows) {
    const row = body.insertRow();
    row.dataset.broker = r.broker;
    const a = after.get(r.broker);
    cell(row, `${r.broker}${r.alive ? "" : " (gone)"}`, r.alive ? "" : "gone");
    cell(row, r.rack || "");
    barCell(row, r.replicas, a ? a.replicas_after : null, topR, String);
    barCell(row, r.leaders, a ? a.leaders_after : null, topL, String);
    barCell(row, r.bytes, a ? a.bytes_after : null, topB, bytes);
  }
}

function renderProposal() {
  if (!proposal) return;
  const r = proposal.report;
  $("proposal-id").textContent = proposal.proposal_id;
  $("proposal-moves").textContent = r.moves;
  $("proposal-lower-bound").textContent = r.lower_bound;
  $("proposal-fair").textContent = r.fair ? "yes (R/R+1)" : "no";
  $("proposal-bytes").textContent = bytes(r.bytes_to_move);
  $("proposal-waves").textContent = proposal.waves.length;
  // KIP-6's lower bound counts the moves of a fair plan (R or R+1 replicas per broker): a plan
  // that cannot be fair may move less, so its distance to the bound means nothing.
  $("proposal-note").textContent = !r.fair
    ? "Not every broker can end at R or R+1 replicas" + (r.fairness_reachable === false ? " (the racks do not allow it)" : "")
      + `; the lower bound (${r.lower_bound}) counts the moves of a fair plan.`
    : r.moves === r.lower_bound
    ? "The fewest moves possible (KIP-6's lower bound)."
    : `${r.moves - r.lower_bound} moves above the lower bound` + (r.rack_fix_moves ? ` (${r.rack_fix_moves} to make partitions rack-valid).` : ".");
}

function renderExecution() {
  const ex = state.execution;
  const running = ex && ex.state === "running";
  $("exec-none").hidden = !!ex;
  $("exec-running").hidden = !ex;
  if (ex) {
    $("exec-id").textContent = `${ex.id} (${ex.mode}, by ${ex.started_by})`;
    $("exec-state").textContent = ex.state + (ex.stop ? ` (stop: ${ex.stop})` : "");
    $("exec-waves").textContent = `${ex.waves_done} of ${ex.waves_total}`;
    $("exec-partitions").textContent = `${ex.partitions_done} of ${ex.partitions_total}`;
    $("exec-bytes-remaining").textContent = bytes(ex.bytes_remaining);
    $("exec-eta").textContent = running ? duration(ex.eta_s) : "";
    const progress = $("exec-progress");
    progress.max = Math.max(1, ex.partitions_total);
    progress.value = ex.partitions_done;
    const moving = (ex.running_wave || []).map((p) => `${p.topic}-${p.partition} -> [${p.target}]`).join(", ");
    $("exec-detail").textContent = (ex.error ? `error: ${ex.error}. ` : "") + (moving ? `moving now: ${moving}` : "");
  }
  $("act-stop").disabled = !running;
  const body = $("executions").tBodies[0];
  body.replaceChildren();
  for (const e of (state.executions || []).filter((e) => !(running && e.id === ex.id))) {  // a running one is above
    const row = body.insertRow();
    for (const v of [e.id, e.mode, e.state, e.started_by, `${e.partitions_done}/${e.partitions_total}`, when(e.finished_ms)]) cell(row, String(v ?? ""));
  }
}

function renderHealing() {
  const h = state.self_healing;
  $("healing-enabled").textContent = h.enabled.length
    ? `On for: ${h.enabled.join(", ")} (broker failure after ${h.broker_failure_grace_s} s, at most one action every ${h.min_interval_s} s).`
    : "Off (reassignd planner serve --self-healing turns it on).";
  const body = $("healing").tBodies[0];
  body.replaceChildren();
  for (const a of h.actions) {
    const row = body.insertRow();
    cell(row, when(a.at_ms));
    cell(row, a.kind);
    cell(row, a.reason);
    cell(row, a.execution ? `execution ${a.execution}` : (a.error || ""));
  }
}

function renderSummary() {
  const m = state.model;
  $("summary").textContent = m.ready
    ? `${m.brokers.length} brokers, ${m.topics} topics, ${m.partitions} partitions; model version ${m.version}` +
      (m.reassignment_running ? "; a reassignment is running" : "") + (m.counts_fair ? "; counts are fair" : "; counts are not R/R+1")
    : `model not ready${m.last_error ? ": " + m.last_error : ""}`;
}

async function refresh() {
  try {
    state = await api("GET", "/state");
    renderSummary();
    renderExecution();
    renderHealing();
    if (state.model.ready && state.model.version !== lastModel) {
      load = await api("GET", "/load");
      lastModel = state.model.version;
      renderBrokers();
    }
    const p = state.proposal;
    const key = p ? `${p.model_version}/${p.computed_ms}` : null;
    if (state.model.ready && p && p.current && key !== lastProposal) {
      proposal = await api("GET", "/proposals");
      lastProposal = key;
      renderProposal();
      renderBrokers();
    }
    showError(null);
  } catch (e) {
    showError(e.message);
  }
}

function confirmed(text, withForce) {
  return new Promise((resolve) => {
    const dialog = $("confirm");
    $("confirm-text").textContent = text;
    $("confirm-force-label").hidden = !withForce;
    $("confirm-force").checked = false;
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok" ? {force: $("confirm-force").checked} : null), {once: true});
    dialog.showModal();
  });
}

// "a, b and 3 more": a list the result names, cut at LISTED.
function named(items) {
  const shown = items.slice(0, LISTED).join(", ");
  return items.length > LISTED ? `${shown} and ${items.length - LISTED} more` : shown;
}

// An answer of a planning POST as lines of text: what the plan does, in the endpoint's own terms
// (its report's numbers as the API gives them), then whether anything was executed.
function describe(endpoint, answer, label) {
  const p = answer.proposal;
  const r = answer.report || (p && p.report);  // a dry run, or an execution's plan
  if (!r) return `${label}: ${answer.message || JSON.stringify(answer)}`;
  const outcome = answer.execution ? `execution ${answer.execution.id} ${answer.execution.state}` : "nothing executed (dry run)";
  const id = p ? `proposal ${p.proposal_id}, ` : "";
  const lines = [];
  if (endpoint === "rebalance_disk") {  // moves between a broker's log directories (spark_jobs.disks)
    lines.push(`${label}: ${id}${r.moves} moves between log directories (${bytes(r.bytes_moved)}); ${outcome}`);
    const skipped = new Map((r.brokers_skipped || []).map((x) => [x.broker, x.reason]));
    const balanced = (b) => (b ? "balanced" : "unbalanced");
    for (const b of r.brokers || []) {
      if (skipped.has(b.broker)) lines.push(`broker ${b.broker}: skipped (${skipped.get(b.broker)})`);
      else if ("balanced_before" in b) lines.push(`broker ${b.broker}: ${balanced(b.balanced_before)} -> ${balanced(b.balanced_after)}`);
    }
    for (const [b, why] of skipped) if (!(r.brokers || []).some((x) => x.broker === b)) lines.push(`broker ${b}: skipped (${why})`);
    if (r.unmovable_count) lines.push(`${r.unmovable_count} replicas cannot move`);
  } else if (endpoint === "demote_broker") {  // reorders and elections, no data moved
    lines.push(`${label}: ${id}${r.partitions_reordered_only} partitions reordered, ${r.leaderships_to_move} leaderships to move; ${outcome}`);
  } else {
    lines.push(`${label}: ${id}${r.moves} moves (lower bound ${r.lower_bound}), fair ${r.fair}; ${outcome}`);
    const tc = r.topic_configuration;
    if (tc) {  // POST /topic_configuration: the replication factors before and after
      const changed = Object.entries(tc.topics_changed);
      for (const [t, c] of changed.slice(0, LISTED)) {
        lines.push(`${t} (${c.partitions} partitions): ${c.replication_factors_before.join("/")} -> ${c.replication_factor_after}`);
      }
      if (changed.length > LISTED) lines.push(`and ${changed.length - LISTED} more topics`);
      if (tc.topics_unchanged.length) lines.push(`already at ${tc.replication_factor}, unchanged: ${named(tc.topics_unchanged)}`);
      lines.push(`${tc.replicas_added} replicas added, ${tc.replicas_removed} removed, ${tc.replicas_relocated} relocated; ` +
        `${tc.leaders_leaving} partitions whose leader leaves` +
        (tc.leaders_leaving ? ` (${named(tc.leaders_leaving_partitions)}${tc.leaders_leaving > tc.leaders_leaving_partitions.length ? ", ..." : ""})` : ""));
      if (tc.skip_rack_awareness_check) lines.push("the rack-awareness check was skipped");
    }
    if (endpoint === "fix_rack_violations" && r.racks) {
      lines.push(`partitions breaking the rack rule: ${r.racks.invalid_partitions_before} now, ${r.racks.invalid_partitions_after} after` +
        (r.rack_fix_moves ? `; ${r.rack_fix_moves} of the moves fix racks` : ""));
    }
  }
  if (p && !answer.execution && !p.waves.length) lines.push("nothing to execute");
  const warnings = r.warnings || [];
  for (const w of warnings.slice(0, LISTED)) lines.push(`warning: ${w}`);
  if (warnings.length > LISTED) lines.push(`and ${warnings.length - LISTED} more warnings`);
  return lines.join("\n");
}

function showReviewed() {
  const button = $("act-execute-reviewed");
  button.hidden = !reviewed;
  if (reviewed) button.textContent = `Execute the reviewed plan (${reviewed.label.replace(" (dry run)", "")})\u2026`;
}

// `again`: the reviewed plan being executed, offered again when the refusal leaves it standing
// (a role too low, or the service unable to execute just now); an out-of-date one (409) is not.
async function act(method, path, label, again = null) {
  const out = $("action-result");
  out.classList.remove("error");
  out.textContent = `${label}...`;
  try {
    const answer = await api(method, path);
    const endpoint = path.split("?")[0].slice(1);
    if (answer.dryrun && answer.proposal && endpoint !== "rebalance") {
      // the plan just shown is the one offered; one with no wave has nothing to execute
      reviewed = answer.proposal.waves.length ? {endpoint, id: answer.proposal.proposal_id, label} : null;
    }
    out.textContent = describe(endpoint, answer, label);
  } catch (e) {
    out.classList.add("error");
    out.textContent = `${label} refused: ${e.message}` + (e.status === 401 || e.status === 403 ? " (this needs a higher role)" : "");
    if (again && !reviewed && [401, 403, 503].includes(e.status)) reviewed = again;
  }
  showReviewed();
  refresh();
}

function wire() {
  $("act-rebalance").addEventListener("click", () => act("POST", "/rebalance?dryrun=true", "dry-run rebalance"));
  $("act-execute").addEventListener("click", async () => {
    if (!proposal) return;
    const ok = await confirmed(`Execute proposal ${proposal.proposal_id}: ${proposal.report.moves} moves in ${proposal.waves.length} waves? ` +
      "It runs exactly as reviewed, or is refused if the cluster changed since.", false);
    if (ok) act("POST", `/rebalance?dryrun=false&proposal_id=${proposal.proposal_id}`, `execute proposal ${proposal.proposal_id}`);
  });
  $("act-broker").addEventListener("submit", (event) => {
    event.preventDefault();
    const ids = $("broker-ids").value.trim();
    const endpoint = event.submitter ? event.submitter.value : "add_broker";
    act("POST", `/${endpoint}?brokerid=${encodeURIComponent(ids)}&dryrun=true`, `${endpoint.replace("_", " ")} ${ids} (dry run)`);
  });
  $("act-fix-racks").addEventListener("click", () => act("POST", "/fix_rack_violations?dryrun=true", "fix rack violations (dry run)"));
  // The forms' inputs are checked by the page (required, pattern) before anything is asked;
  // what only the cluster can tell (a regex matching no topic, too few brokers) is the service's 400.
  $("rf-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!event.target.reportValidity()) return;
    const topic = $("rf-topic").value.trim(), rf = $("rf-factor").value.trim(), skip = $("rf-skip-racks").checked;
    act("POST", `/topic_configuration?topic=${encodeURIComponent(topic)}&replication_factor=${encodeURIComponent(rf)}` +
      (skip ? "&skip_rack_awareness_check=true" : "") + "&dryrun=true",
    `replication factor of ${topic} to ${rf}${skip ? ", rack check skipped" : ""} (dry run)`);
  });
  $("disk-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!event.target.reportValidity()) return;
    const ids = $("disk-ids").value.trim();
    act("POST", `/rebalance_disk?${ids ? `brokerid=${encodeURIComponent(ids)}&` : ""}dryrun=true`,
      ids ? `rebalance disk ${ids} (dry run)` : "rebalance disk, every broker (dry run)");
  });
  $("act-execute-reviewed").addEventListener("click", async () => {
    if (!reviewed) return;
    const r = reviewed;
    const ok = await confirmed(`Execute proposal ${r.id} (${r.label.replace(" (dry run)", "")}) exactly as reviewed? ` +
      "It is refused if the cluster changed since.", false);
    if (ok) {
      reviewed = null;
      act("POST", `/${r.endpoint}?dryrun=false&proposal_id=${r.id}`, `execute proposal ${r.id}`, r);
    }
  });
  $("act-stop").addEventListener("click", async () => {
    const ok = await confirmed("Stop the running execution? By default the running wave finishes and no more start.", true);
    if (ok) act("POST", `/stop_proposal_execution?force_stop=${ok.force}`, "stop");
  });
}

wire();
refresh();
setInterval(refresh, POLL_MS);
