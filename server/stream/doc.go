// Package stream is the lab's live stream protocol (GET /ws) as Go types:
// one type per message the lab sends, the snapshot included. The producer
// (package app), the snapshot (package server) and the browser tests' fake
// lab (web/e2e) all build their messages from these types, so the wire
// format is written down once; docs/protocol.md describes it, and a test
// in this package keeps the two in step.
//
// The envelope around each message (seq, type, time) and the rules of
// connecting and resuming belong to server/hub; this package only says
// what the "data" of each type is.
package stream
