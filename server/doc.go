// Package server is ccmlab's HTTP face: the JSON API the web view, the
// exercises and instructors use, the websocket stream of live changes, and
// the static assets. It is built on echo; it holds no lab state of its own
// and only calls into the lab's components.
package server
