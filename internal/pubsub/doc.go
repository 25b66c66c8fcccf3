// Package pubsub is the lab's one fan-out primitive: a Broadcaster hands
// each published value to every subscriber's channel without ever waiting
// for a subscriber.
//
// The publishers are parts that must not stall because a browser tab is
// slow: the simulated cloud (its events), the CCM manager (controller
// switches) and the data plane (request traces). So every subscriber gets a
// bounded buffer, and when that buffer is full the value is dropped for
// that subscriber only; the others and the publisher carry on. A slow
// subscriber is never closed behind its back: it notices the loss as a gap
// in the sequence numbers PublishSeq hands out, and resynchronises from a
// snapshot of whatever it follows.
package pubsub
