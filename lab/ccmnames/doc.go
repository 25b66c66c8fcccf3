// Package ccmnames holds the names the lab's CCM controllers and its lbc
// add-on act under: the callers the call log shows, the field manager of
// their writes, the add-on's class, finalizer, annotation and load
// balancer names. It sits below both the controllers that write by these
// names and the exercise checks that look for them, so a check never
// depends on the CCM's code (internal/layers forbids it).
package ccmnames
