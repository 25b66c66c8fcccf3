// Package live asks the apiserver, not an informer cache, whether a Service
// a controller is about to create a load balancer for still exists in the
// form the controller saw.
//
// Why: a controller instance decides from its cache. One that starts from
// a list older than etcd (client-go falls back to a list served from the
// apiserver's watch cache when its consistent watch-list request fails, as
// it can under load) can see a Service an earlier instance already cleaned
// up and deleted, create its load balancer, and be switched off before the
// deletion reaches it; no later instance hears of that Service again, and
// the load balancer is orphaned. Real controllers restart rarely, so
// upstream lives with that window; a lab whose controllers are switched
// several times a second closes it with one GET per creation.
package live
