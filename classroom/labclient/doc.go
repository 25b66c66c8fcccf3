// Package labclient is the classroom portal's client of one student's lab:
// every call the portal makes to a lab (its health, its exercises, the
// dashboard's actions, its live stream) goes through it.
//
// It speaks in the lab's own Go types — labapi.Summary and Detail,
// labapi.ResetOptions, labapi.Faults, labapi.Message, the very types the
// lab's exercises, cloud and stream serve (internal/labapi, a leaf, so the
// portal links none of the lab) — rather than mirrors of them, so a field
// the lab renames or retypes breaks the build here instead of reading as
// zero on the dashboard. A refusal is an *Error with
// the lab's status and the message of its {"error": "..."} body
// (httpguard.ErrorBody, the shape every ccmlab server answers with).
//
// The portal and its labs run the same binary (the local backend starts
// the portal's own executable; the kubernetes backend an image built from
// the same tree), so the client assumes the lab's API is its own version.
package labclient
