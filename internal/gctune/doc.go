// Package gctune sets the Go garbage collector's target (GOGC) from how
// much the lab is allocating, so that an idle lab keeps a small heap and a
// busy one does not pay for that.
//
// A lab spends most of its life idle: a live heap of about 90 MB (mostly
// the apiserver's OpenAPI documents and routes) and an allocation rate
// under 1 MB/s. There a tight target (GOGC 50) keeps the heap, and so each
// student's memory, small at next to no CPU cost. When many nodes join or
// many Services are created the rate is hundreds of MB/s, and the
// collector's CPU is proportional to rate/GOGC: at 50 a 100-node join ran
// about a fifth slower than at Go's default of 100 on two cores. So the
// tuner watches the rate and switches between the two, and hands the busy
// spell's heap back to the OS when the lab turns idle again.
//
// The lab's Go soft memory limit (ccmlab serve --memory-limit) works
// beside it: GOGC paces collection while the heap is small, the limit
// makes the runtime collect harder whatever GOGC says once the heap nears
// it. Neither needs to know the other.
package gctune
