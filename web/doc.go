// Package web is the lab's page: one templ-rendered HTML document plus small
// hand-written ES modules and one stylesheet, all embedded in the binary.
//
// The page is a view of the websocket stream (docs/protocol.md): the
// JS keeps one store, replaces it on every `snapshot` and applies every
// other message, and redraws only the regions a message touched, at most
// once per animation frame. Actions go to the REST API with same-origin
// fetches.
//
// Every text the page shows, in Japanese and English, lives in strings.go;
// the page gets the current language's strings as JSON, so Go and JS read
// one catalog. Nothing on the page comes from another origin: the handler's
// Content-Security-Policy only allows 'self'.
//
// Mount it on the server:
//
//	assets, err := web.Handler(web.Config{})
//	srv, err := server.New(server.Config{Logger: logger, Assets: assets})
package web
