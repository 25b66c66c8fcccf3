// Package hub is the live event stream from the lab to browsers.
//
// The server publishes one JSON [Message] per change (Kubernetes object
// changes, cloud API calls, controller toggles, flow steps, traces) with
// [Hub.Publish]. Every message gets the next sequence number, is kept in a
// bounded replay ring and is fanned out to every connected browser.
// Browsers connect to the hub's [Hub.ServeHTTP] handler (mounted at GET /ws)
// with a WebSocket and receive:
//
//   - a "snapshot" message first (the value returned by [Config.Snapshot],
//     stamped with the sequence number it is consistent with), then every
//     later message in order; or
//   - when reconnecting with ?since=N and every message after N is still in
//     the ring: exactly the messages after N, then live ones; no gap, no
//     duplicate.
//
// Each connection has one writer goroutine draining a bounded queue.
// Publish never blocks on a connection: a browser whose queue is full is
// disconnected with close code 1013 and the reason
// "too slow; reconnect with ?since=<seq>", and may resume from there.
// [Hub.Close] sends every browser a final "bye" message and closes with
// 1001 (going away).
//
// With Config.RecordEvery set, the hub also keeps a recording: a base
// snapshot every RecordEvery messages, kept while the ring holds every
// message after it. [Hub.ServeRecording] (GET /api/recording) answers it as
// NDJSON, from which a player reconstructs every moment it covers.
//
// docs/protocol.md is the wire contract for browser code.
package hub
