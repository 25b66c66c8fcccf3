// Package labapi holds the wire types of the lab's own HTTP API and live
// stream that a client outside the lab reads: the cloud's faults
// (/api/cloud/faults), the exercise views (/api/exercises/...), the
// stream's envelope and its flow and exercise messages (/ws), and the lab
// defaults the classroom shows an instructor.
//
// It is a leaf: it imports only the standard library and internal/i18n,
// so the classroom portal (and its labclient) speak the lab's types
// without linking the lab. The packages that serve these types (lab/cloud,
// exercises, lab/flow, server/hub, server/stream) name them by type
// aliases, so their code reads as before; a type changes here, once.
package labapi
