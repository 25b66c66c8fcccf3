// Package replay serves a recorded demo: the lab's page and the recording
// a lab's GET /api/recording gave (docs/protocol.md, "Recordings"), from
// that file alone. There is no control plane, no cloud and no data dir:
// the page finds itself in replay mode, fetches the recording and plays it
// with its own player (web/static/js/player.js). `ccmlab replay` runs it.
package replay
