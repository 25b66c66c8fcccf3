// Package httpguard is the HTTP edge every ccmlab server shares: the lab's
// API and page, the replay server, the pprof listener and the classroom
// portal.
//
// Guard refuses, before any handler runs, a request whose Host is not one
// of the server's own names (421: DNS rebinding, where a page of another
// site resolves its own name to 127.0.0.1 and so shares the browser's
// same-origin rules with the lab), a cross-origin mutation or websocket
// upgrade (403, with net/http's CrossOriginProtection), and a query with a
// repeated or malformed parameter (400). DecodeJSON reads a JSON body
// strictly (size, Content-Type, duplicate keys, unknown fields, trailing
// data) and WriteError answers {"error": "..."}.
package httpguard
