// The websocket client of docs/protocol.md: a snapshot first, then
// one message per change; reconnects with backoff and resumes with
// ?since=<lastSeq>&epoch=<epoch>, or starts fresh after a `bye`.

const MIN_DELAY = 250;
const MAX_DELAY = 8000;

// connect calls onMessage(m) for every message and onState(state, info) when
// the connection changes: "connecting", "live", "reconnecting" ({attempt,
// delay}) or "restarting" (the server said bye).
export function connect({ onMessage, onState }) {
  let lastSeq = null;
  let epoch = "";
  let fresh = true; // next connection asks for a snapshot
  let attempt = 0;
  let ws = null;
  let timer = null;
  let down = "reconnecting"; // or "restarting" after a bye

  function url() {
    // Relative, so the page also works behind a prefix (the classroom's /s/<name>/).
    const u = new URL("ws", location.href);
    u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    if (!fresh && lastSeq !== null && epoch) {
      u.searchParams.set("since", String(lastSeq));
      u.searchParams.set("epoch", epoch);
    }
    return u.href;
  }

  function open() {
    timer = null;
    if (attempt === 0) onState("connecting", {});
    const sock = new WebSocket(url());
    ws = sock;
    const resuming = !fresh && lastSeq !== null && !!epoch;
    sock.onopen = () => {
      attempt = 0;
      down = "reconnecting";
      // A fresh connection is live once its snapshot is in; a resumed one
      // already holds the state, and may get no message for a while.
      if (resuming) onState("live", {});
    };
    sock.onmessage = (ev) => {
      let m;
      try {
        m = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (m.type === "snapshot") {
        epoch = (m.data && m.data.epoch) || "";
        fresh = false;
        lastSeq = m.seq;
        onMessage(m);
        onState("live", {});
        return;
      } else if (m.type === "bye") {
        // The server is going away: after it comes back its seqs restart,
        // so ask for a snapshot rather than resuming.
        fresh = true;
        down = "restarting";
        onState(down, {});
        return;
      } else if (lastSeq !== null && m.seq !== lastSeq + 1) {
        // A gap should not happen; resume from what we have and let the
        // server replay or send a snapshot.
        sock.close(4000, "gap");
        return;
      }
      lastSeq = m.seq;
      onMessage(m);
    };
    sock.onclose = (ev) => {
      if (ws !== sock) return;
      ws = null;
      // 1013: we were too slow; resume right away. Anything else: back off.
      const base = ev.code === 1013 ? MIN_DELAY : Math.min(MAX_DELAY, MIN_DELAY * 2 ** attempt);
      const delay = Math.round(base * (0.75 + Math.random() * 0.5));
      attempt++;
      onState(down, { attempt, delay });
      timer = setTimeout(open, delay);
    };
  }

  // Coming back to the tab or the network: try now rather than wait out
  // the backoff.
  const retryNow = () => {
    if (timer !== null) {
      clearTimeout(timer);
      open();
    }
  };
  window.addEventListener("online", retryNow);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") retryNow();
  });

  open();
}
