package httpguard

// RoleHeader is set by the classroom portal on what it forwards to a lab
// from a student (RoleStudent) and removed from everything else it
// forwards, so a lab behind the portal tells a student from the
// instructor and leaves the instructor's controls out of the student's
// page. A lab reached without the portal is its owner's, who is their own
// instructor.
const (
	RoleHeader  = "X-Ccmlab-Role"
	RoleStudent = "student"
)
