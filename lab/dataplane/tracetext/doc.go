// Package tracetext holds, in Japanese and English, why a request traced
// through the data plane did not get through (a Trace's error).
// lab/dataplane sends a key and its arguments; the page fills the text in
// its own language, and lab/dataplane keeps the English rendering in
// Trace.Error for API readers.
//
// It is a leaf (it imports only internal/i18n) so the web page can merge
// the catalog into its own without linking the Kubernetes client that
// lab/dataplane needs.
package tracetext
