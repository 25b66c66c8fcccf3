// Package flowtext holds the flow's words in Japanese and English: what
// proved each step (evidence) and the detail of a stuck step. lab/flow
// sends a key and its arguments; the page fills the text in its own
// language, and lab/flow keeps an English rendering for API readers.
//
// It is a leaf (it imports only internal/i18n) so the web page can merge
// the catalog into its own without linking the Kubernetes client that
// lab/flow needs.
package flowtext
