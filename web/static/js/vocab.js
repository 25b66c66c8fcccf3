// The page's one vocabulary of glyphs: how each state the lab sends looks,
// always a glyph beside a word, never colour alone. Every renderer takes
// its glyphs from here, so a step, an instance or a target looks the same
// in the strip, the diagram, the tables and the map.

// A flow step's status (lab/flow StepStatus).
export const STEP_GLYPH = { done: "✓", current: "▶", stuck: "⚠", pending: "○" };

// An EC2 instance's state (lab/cloud InstanceState).
export const INSTANCE_GLYPH = { running: "▶", pending: "…", stopping: "■", stopped: "■", terminated: "✗" };

// A load balancer target's health (lab/cloud TargetHealth), and the
// catalog key of its word.
export const HEALTH_GLYPH = { healthy: "✓", unhealthy: "✗", initial: "…", unused: "–" };
export const HEALTH_KEY = { healthy: "health.healthy", unhealthy: "health.unhealthy", initial: "health.initial", unused: "health.unused" };

// A node's state on the map: a glyph and the catalog key of its word.
export const NODE_STATE = {
  launching: { glyph: "…", key: "map.state.launching" },
  booting: { glyph: "◔", key: "map.state.booting" },
  uninitialized: { glyph: "⚑", key: "map.state.uninitialized" },
  ready: { glyph: "✓", key: "map.state.ready" },
  notready: { glyph: "✗", key: "map.state.notready" },
  shutdown: { glyph: "■", key: "map.state.shutdown" },
  gone: { glyph: "✕", key: "map.state.gone" },
};

// A cloud call's outcome in the call log, and the catalog key of its word.
export const CALL_BADGE = {
  error: { glyph: "✖", key: "call.error" },
  throttled: { glyph: "◷", key: "call.throttled" },
  waiting: { glyph: "‖", key: "call.waiting" },
  running: { glyph: "…", key: "call.running" },
};

// A node's taints in the cluster table: the uninitialized and shutdown
// taints (NodeView.uninitialized, .shutdown) get a glyph and a word.
export const TAINT_GLYPH = { uninitialized: "◷", shutdown: "■" };

// A Pod's readiness and a Node's Ready condition in the cluster table.
export const READY_GLYPH = { yes: "✓", no: "✗", podReady: "●", podNotReady: "○", pending: "…", warning: "⚠" };
