package labapi

import (
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// The exercise API's views (GET /api/exercises, GET and POST
// /api/exercises/{id}/...), built by package exercises.

// Summary is one line of the exercise list.
type Summary struct {
	ID      string `json:"id"`
	Order   int    `json:"order"`
	Title   string `json:"title"`
	Goal    string `json:"goal"`
	Minutes int    `json:"minutes"`
	// Available is false when this lab lacks what the exercise needs;
	// Unavailable then says what.
	Available   bool   `json:"available"`
	Unavailable string `json:"unavailable,omitempty"`
	// Restart, when the exercise is unavailable and the lab can restart
	// itself, is the profile and add-ons to restart it with
	// (POST /api/lab/restart).
	Restart *Restart `json:"restart,omitempty"`
	// Started: the exercise was reset (its StartedAt is its own). The
	// page reads it for the diagnosis challenge, which runs from its reset
	// until the cause is named.
	Started          bool `json:"started"`
	Steps            int  `json:"steps"`
	StepsPassed      int  `json:"stepsPassed"`
	Questions        int  `json:"questions"`
	QuestionsCorrect int  `json:"questionsCorrect"`
	Done             bool `json:"done"`
	// WrongAnswers counts wrong quiz choices, typed values and named
	// causes; HintsOpened the hints (and solutions) opened. Both are for
	// the instructor's dashboard.
	WrongAnswers int `json:"wrongAnswers"`
	HintsOpened  int `json:"hintsOpened"`
}

// Detail is one exercise in one language with the student's progress.
type Detail struct {
	Summary
	Setup    string   `json:"setup"`
	Profiles []string `json:"profiles,omitempty"`
	Requires []string `json:"requires,omitempty"`
	// Latency is the cloud latency the reset sets for classroom pace
	// ("" when the exercise leaves it alone); CloudLatency is the latency
	// now (the instructor may have changed it).
	Latency      string    `json:"latency,omitempty"`
	CloudLatency string    `json:"cloudLatency"`
	StartedAt    time.Time `json:"startedAt"`
	// CurrentStep is the id of the first step not passed ("" when all
	// passed or there are none).
	CurrentStep string         `json:"currentStep"`
	Steps       []StepView     `json:"steps"`
	Quiz        []QuestionView `json:"quiz"`
	// Reset is the note the last reset left when it did not simply go
	// through: it failed (and why), or it was interrupted by a stop of the
	// lab and finished at the next start. Nil otherwise.
	Reset *ResetNote `json:"reset,omitempty"`
	// Shell is the line a terminal runs once before the steps' terminal
	// commands (those with Console false): `. <data-dir>/lab.env`, which
	// sets KUBECONFIG and the AWS CLI's variables for this lab. The
	// commands already name the lab's address and data dir.
	Shell string `json:"shell,omitempty"`
	// Ending is the exercise's closing text (what was seen, the chapter's
	// section and goal it serves), sent only once the exercise is Done:
	// it names what the steps ask the student to find.
	Ending string `json:"ending,omitempty"`
	// *MysteryView: mystery-pending's service and causes (mystery.go).
	*MysteryView
}

// ResetNote is what the page says about the last reset.
type ResetNote struct {
	// State is progress.ResetFailed, progress.ResetResumed,
	// progress.ResetRunning (a reset is running now) or progress.ResetDone
	// (it went through; Note names what it removed beyond the exercise's
	// own objects: VMs launched from the cloud panel or the API, orphaned
	// load balancers, injected faults).
	State string    `json:"state"`
	Note  string    `json:"note,omitempty"`
	At    time.Time `json:"at"`
}

// StepView is a step as the page shows it.
type StepView struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Body     string        `json:"body"`
	Commands []CommandView `json:"commands"`
	// Hints are the hints opened so far (POST …/steps/<step>/hint opens
	// the next); HintCount is how many the step has.
	Hints     []string `json:"hints"`
	HintCount int      `json:"hintCount"`
	// Checks names what "check now" looks at, e.g. "serviceExternalIP".
	Checks   []string  `json:"checks"`
	Passed   bool      `json:"passed"`
	PassedAt time.Time `json:"passedAt,omitzero"`
	Attempts int       `json:"attempts"`
	// Locked: an earlier step has not passed yet.
	Locked bool `json:"locked"`
	// Explanation is shown once the step passed.
	Explanation string `json:"explanation,omitempty"`
	// Solution is what passes the step, commands and page actions. It is
	// sent only once every hint was opened and the solution asked for (one
	// more …/hint): before that, SolutionHidden says there is one.
	Solution       []SolutionView `json:"solution"`
	SolutionHidden bool           `json:"solutionHidden,omitempty"`
	// Answer is set when the step asks the student to type a value.
	Answer *AnswerView `json:"answer,omitempty"`
}

// SolutionView is one line of a step's solution: a command (Command, with
// Console saying whether the lab's console runs it) or an action in words.
type SolutionView struct {
	Command string `json:"command,omitempty"`
	Console bool   `json:"console,omitempty"`
	Action  string `json:"action,omitempty"`
}

// AnswerView is a step's typed answer as the page shows it.
type AnswerView struct {
	Prompt   string `json:"prompt"`
	Value    string `json:"value,omitempty"` // the last value typed
	Correct  bool   `json:"correct"`
	Attempts int    `json:"attempts"`
}

// CommandView is one command to try. Console says whether the lab's
// console runs it; the others need a shell (pipes, sleep, jq).
type CommandView struct {
	Line    string `json:"line"`
	Console bool   `json:"console"`
}

// QuestionView is a quiz question. A choice's reasoning is shown once it
// was chosen; all of them once the question was answered correctly.
type QuestionView struct {
	ID       string       `json:"id"`
	Question string       `json:"question"`
	Choices  []ChoiceView `json:"choices"`
	Answered bool         `json:"answered"`
	Choice   *int         `json:"choice,omitempty"`
	Correct  bool         `json:"correct"`
	Attempts int          `json:"attempts"`
	// Locked: the exercise's steps have not all passed; Question and
	// Choices are then left out (the API refuses an answer).
	Locked bool `json:"locked,omitempty"`
}

// ChoiceView is one choice; Why and Correct are set once revealed.
type ChoiceView struct {
	Text    string `json:"text"`
	Why     string `json:"why,omitempty"`
	Correct *bool  `json:"correct,omitempty"`
}

// Restart is the lab an unavailable exercise would run in: the profile
// and add-ons to restart the lab with. The page offers it (with a
// confirmation) instead of a bare "not in this lab"; progress is kept
// across the restart.
type Restart struct {
	Profile string   `json:"profile"`
	Addons  []string `json:"addons"`
}

// MysteryID is the diagnosis challenge: Reset leaves a type: LoadBalancer
// Service whose load balancer does not serve, for one hidden cause; the
// student names the cause, then fixes it.
const MysteryID = "mystery-pending"

// CauseView is a cause as the page lists it: never whether it is the one.
type CauseView struct {
	ID    string    `json:"id"`
	Label i18n.Text `json:"label"`
}

// MysteryView is what GET /api/exercises/mystery-pending adds: the Service
// to diagnose, the causes to choose from, the last answer and, only once
// the student has named the right cause, the cause and why it looked the
// way it did.
type MysteryView struct {
	Service string      `json:"service"`
	Causes  []CauseView `json:"causes"`
	// Named: the student has given the diagnosis; the first answer is
	// final, right or wrong.
	Named bool `json:"named"`
	// Answer and Correct are the last answer and whether it was right.
	Answer  string `json:"answer,omitempty"`
	Correct *bool  `json:"correct,omitempty"`
	// Misses counts the wrong answers; each one costs an attempt.
	Misses int `json:"misses,omitempty"`
	// Nudge, after a wrong answer, says where the evidence for or against
	// that answer is, never what the hidden cause is.
	Nudge string `json:"nudge,omitempty"`
	// Cause and Why: the hidden cause, revealed once it was named.
	Cause string `json:"cause,omitempty"`
	Why   string `json:"why,omitempty"`
	// Plant: the page may offer the choice of the next reset's cause. The
	// server sets it for an instructor (or a lab of one's own), never
	// for a student behind the classroom portal.
	Plant bool `json:"plant,omitempty"`
}

// ResetOptions is the optional body of POST /api/exercises/{id}/reset.
type ResetOptions struct {
	// Cause names the hidden cause of a diagnosis challenge; other
	// exercises take none.
	Cause string `json:"cause,omitempty"`
}
