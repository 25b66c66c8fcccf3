package progress

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"syscall"
	"time"

	"modernc.org/sqlite" // database/sql driver "sqlite", pure Go
	sqlite3 "modernc.org/sqlite/lib"
)

// Store keeps students' progress in an SQLite file (<data-dir>/progress.db)
// so that it survives restarts of the lab: per exercise its start time,
// per step when it passed, how many checks it took and how many hints were
// opened, per question the last answer and how many answers were wrong,
// and the lab's own seed (Seed) that orders quiz choices for this student.
type Store struct {
	db *sql.DB
}

// StepProgress is one step's record.
type StepProgress struct {
	PassedAt time.Time `json:"passedAt,omitzero"`
	Attempts int       `json:"attempts"`
}

// Passed reports whether the step has passed.
func (p StepProgress) Passed() bool { return !p.PassedAt.IsZero() }

// Answer is one quiz question's record.
type Answer struct {
	Choice      int       `json:"choice"`      // the last choice
	Correct     bool      `json:"correct"`     // whether the last choice was right
	EverCorrect bool      `json:"everCorrect"` // whether any answer was right
	Attempts    int       `json:"attempts"`
	AnsweredAt  time.Time `json:"answeredAt"`
	// FirstChoice and FirstCorrect are the first answer's: a quiz counts
	// the first try, later ones only show the reasoning.
	FirstChoice  int  `json:"firstChoice"`
	FirstCorrect bool `json:"firstCorrect"`
	// Wrong counts the wrong answers: what the instructor's dashboard
	// shows next to the steps.
	Wrong int `json:"wrong"`
}

// StepAnswer is the last value a student typed for a step that asks for
// one, and whether it matched the lab.
type StepAnswer struct {
	Value      string    `json:"value"`
	Correct    bool      `json:"correct"`
	Attempts   int       `json:"attempts"`
	AnsweredAt time.Time `json:"answeredAt"`
	Wrong      int       `json:"wrong"` // how many typed values did not match
}

const schema = `
CREATE TABLE IF NOT EXISTS exercise (
	id         TEXT PRIMARY KEY,
	started_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS step (
	exercise  TEXT NOT NULL,
	step      TEXT NOT NULL,
	passed_at INTEGER,
	attempts  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (exercise, step)
);
CREATE TABLE IF NOT EXISTS answer (
	exercise     TEXT NOT NULL,
	question     TEXT NOT NULL,
	choice       INTEGER NOT NULL,
	correct      INTEGER NOT NULL,
	ever_correct INTEGER NOT NULL,
	attempts     INTEGER NOT NULL,
	answered_at  INTEGER NOT NULL,
	PRIMARY KEY (exercise, question)
);
CREATE TABLE IF NOT EXISTS step_answer (
	exercise    TEXT NOT NULL,
	step        TEXT NOT NULL,
	value       TEXT NOT NULL,
	correct     INTEGER NOT NULL,
	attempts    INTEGER NOT NULL,
	answered_at INTEGER NOT NULL,
	PRIMARY KEY (exercise, step)
);
CREATE TABLE IF NOT EXISTS hint (
	exercise TEXT NOT NULL,
	step     TEXT NOT NULL,
	shown    INTEGER NOT NULL,
	PRIMARY KEY (exercise, step)
);
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS reset_state (
	exercise TEXT PRIMARY KEY,
	state    TEXT NOT NULL,
	options  TEXT NOT NULL,
	note     TEXT NOT NULL,
	at       INTEGER NOT NULL
);
`

// migrations add what older progress files lack; "duplicate column" means
// the file already has it.
var migrations = []string{
	`ALTER TABLE answer ADD COLUMN first_choice INTEGER NOT NULL DEFAULT -1`,
	`ALTER TABLE answer ADD COLUMN first_correct INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE answer ADD COLUMN wrong INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE step_answer ADD COLUMN wrong INTEGER NOT NULL DEFAULT 0`,
}

// progressTables are the tables of an exercise's progress, cleared by a
// restart or a reset.
var progressTables = []string{"step", "answer", "step_answer", "hint"}

// Open opens (creating if needed) the progress database at path.
func Open(path string) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	// One connection: SQLite serialises writers anyway, and this keeps
	// "database is locked" out of the picture.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("progress database %s: %w", path, err)
	}
	for _, m := range migrations {
		if _, err := db.Exec(m); err != nil && !strings.Contains(err.Error(), "duplicate column") {
			db.Close()
			return nil, fmt.Errorf("progress database %s: %w", path, err)
		}
	}
	return &Store{db: db}, nil
}

// fullErr marks SQLite's "database or disk is full" (SQLITE_FULL, which is
// what SQLite answers when a write meets ENOSPC) as syscall.ENOSPC too, so
// that datafs.IsFull recognises it like any other full-disk error and the
// API answers 507 rather than 500. Other errors pass unchanged.
func fullErr(err error) error {
	var e *sqlite.Error
	if errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_FULL {
		return fmt.Errorf("%w (%w)", err, syscall.ENOSPC)
	}
	return err
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid || n.Int64 == 0 {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// Started returns when the exercise was last reset, if ever.
func (s *Store) Started(ctx context.Context, exercise string) (time.Time, bool, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT started_at FROM exercise WHERE id = ?`, exercise).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return fromNanos(n), true, nil
}

// Restart clears an exercise's progress and records a new start time.
func (s *Store) Restart(ctx context.Context, exercise string, at time.Time) (err error) {
	defer func() { err = fullErr(err) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := clearProgress(ctx, tx, []string{exercise}); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO exercise (id, started_at) VALUES (?, ?)
		ON CONFLICT (id) DO UPDATE SET started_at = excluded.started_at`, exercise, nanos(at)); err != nil {
		return err
	}
	return tx.Commit()
}

// Steps returns the exercise's step records by step id.
func (s *Store) Steps(ctx context.Context, exercise string) (map[string]StepProgress, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT step, passed_at, attempts FROM step WHERE exercise = ?`, exercise)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]StepProgress{}
	for rows.Next() {
		var id string
		var passed sql.NullInt64
		var p StepProgress
		if err := rows.Scan(&id, &passed, &p.Attempts); err != nil {
			return nil, err
		}
		p.PassedAt = fromNanos(passed)
		out[id] = p
	}
	return out, rows.Err()
}

// RecordAttempt counts one check of a step that had not passed yet and,
// when passed, records when. A step that already passed keeps its time.
func (s *Store) RecordAttempt(ctx context.Context, exercise, step string, passed bool, at time.Time) (StepProgress, error) {
	var passedAt any
	if passed {
		passedAt = nanos(at)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO step (exercise, step, passed_at, attempts) VALUES (?, ?, ?, 1)
		ON CONFLICT (exercise, step) DO UPDATE SET
			attempts = step.attempts + 1,
			passed_at = COALESCE(step.passed_at, excluded.passed_at)`, exercise, step, passedAt)
	if err != nil {
		return StepProgress{}, fullErr(err)
	}
	m, err := s.Steps(ctx, exercise)
	return m[step], err
}

// Answers returns the exercise's quiz records by question id.
func (s *Store) Answers(ctx context.Context, exercise string) (map[string]Answer, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT question, choice, correct, ever_correct, attempts, answered_at, first_choice, first_correct, wrong FROM answer WHERE exercise = ?`, exercise)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Answer{}
	for rows.Next() {
		var id string
		var a Answer
		var at sql.NullInt64
		if err := rows.Scan(&id, &a.Choice, &a.Correct, &a.EverCorrect, &a.Attempts, &at, &a.FirstChoice, &a.FirstCorrect, &a.Wrong); err != nil {
			return nil, err
		}
		a.AnsweredAt = fromNanos(at)
		out[id] = a
	}
	return out, rows.Err()
}

// RecordAnswer stores an answer to a question; the first one is kept
// apart (FirstChoice, FirstCorrect).
func (s *Store) RecordAnswer(ctx context.Context, exercise, question string, choice int, correct bool, at time.Time) (Answer, error) {
	_, err := s.db.ExecContext(ctx, `INSERT INTO answer (exercise, question, choice, correct, ever_correct, attempts, answered_at, first_choice, first_correct, wrong)
		VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?)
		ON CONFLICT (exercise, question) DO UPDATE SET
			choice = excluded.choice, correct = excluded.correct,
			ever_correct = MAX(answer.ever_correct, excluded.ever_correct),
			attempts = answer.attempts + 1, answered_at = excluded.answered_at,
			wrong = answer.wrong + excluded.wrong`,
		exercise, question, choice, correct, correct, nanos(at), choice, correct, wrongOf(correct))
	if err != nil {
		return Answer{}, fullErr(err)
	}
	m, err := s.Answers(ctx, exercise)
	return m[question], err
}

// StepAnswers returns the exercise's typed answers by step id.
func (s *Store) StepAnswers(ctx context.Context, exercise string) (map[string]StepAnswer, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT step, value, correct, attempts, answered_at, wrong FROM step_answer WHERE exercise = ?`, exercise)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]StepAnswer{}
	for rows.Next() {
		var id string
		var a StepAnswer
		var at sql.NullInt64
		if err := rows.Scan(&id, &a.Value, &a.Correct, &a.Attempts, &at, &a.Wrong); err != nil {
			return nil, err
		}
		a.AnsweredAt = fromNanos(at)
		out[id] = a
	}
	return out, rows.Err()
}

// RecordStepAnswer stores the value typed for a step. A right answer
// stays right: a later wrong one does not take a passed answer back.
func (s *Store) RecordStepAnswer(ctx context.Context, exercise, step, value string, correct bool, at time.Time) (StepAnswer, error) {
	_, err := s.db.ExecContext(ctx, `INSERT INTO step_answer (exercise, step, value, correct, attempts, answered_at, wrong)
		VALUES (?, ?, ?, ?, 1, ?, ?)
		ON CONFLICT (exercise, step) DO UPDATE SET
			value = CASE WHEN step_answer.correct THEN step_answer.value ELSE excluded.value END,
			correct = MAX(step_answer.correct, excluded.correct),
			attempts = step_answer.attempts + 1, answered_at = excluded.answered_at,
			wrong = step_answer.wrong + excluded.wrong`,
		exercise, step, value, correct, nanos(at), wrongOf(correct))
	if err != nil {
		return StepAnswer{}, fullErr(err)
	}
	m, err := s.StepAnswers(ctx, exercise)
	return m[step], err
}

func wrongOf(correct bool) int {
	if correct {
		return 0
	}
	return 1
}

// WrongAnswers counts the exercise's wrong answers: quiz choices, typed
// values and (mystery-pending) causes named that were not right.
func (s *Store) WrongAnswers(ctx context.Context, exercise string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT COALESCE(SUM(wrong), 0) FROM answer WHERE exercise = ?) +
		(SELECT COALESCE(SUM(wrong), 0) FROM step_answer WHERE exercise = ?)`, exercise, exercise).Scan(&n)
	return n, err
}

// Hints returns, by step id, how many of the step's hints were opened
// (the solution counts as one more: see RevealHint).
func (s *Store) Hints(ctx context.Context, exercise string) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT step, shown FROM hint WHERE exercise = ?`, exercise)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// RevealHint opens one more of a step's hints, up to most, and returns how
// many are open. The lab, not the page, remembers it: what is revealed
// survives a reload and the dashboard can count it.
func (s *Store) RevealHint(ctx context.Context, exercise, step string, most int) (int, error) {
	if most <= 0 {
		return 0, nil
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO hint (exercise, step, shown) VALUES (?, ?, 1)
		ON CONFLICT (exercise, step) DO UPDATE SET shown = MIN(hint.shown + 1, ?)`, exercise, step, most)
	if err != nil {
		return 0, fullErr(err)
	}
	m, err := s.Hints(ctx, exercise)
	return m[step], err
}

// Seed returns this lab's own random number, drawn the first time and kept:
// it orders every question's choices, so one student always sees one
// order and two students most likely different ones.
func (s *Store) Seed(ctx context.Context) (uint64, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'seed'`).Scan(&v)
	if err == nil {
		return uint64(v), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	// INSERT OR IGNORE: a concurrent first call keeps the first seed.
	if _, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO meta (key, value) VALUES ('seed', ?)`, int64(rand.Uint64())); err != nil {
		return 0, fullErr(err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'seed'`).Scan(&v); err != nil {
		return 0, err
	}
	return uint64(v), nil
}

// States of an exercise's reset that the store keeps (reset_state). A
// reset that ended well and normally leaves no row.
const (
	// ResetRunning: written before the reset touches the lab; found at
	// start, it means the lab stopped in the middle of that reset.
	ResetRunning = "running"
	// ResetFailed: the reset ended with an error; Note says which.
	ResetFailed = "failed"
	// ResetResumed: a reset interrupted by a stop was finished at the next
	// start.
	ResetResumed = "resumed"
	// ResetDone: the reset went through and took away more than the
	// exercise's own objects (a VM launched earlier, an injected fault);
	// Note says what, so nothing goes unannounced.
	ResetDone = "done"
)

// ResetState is the record of an exercise's last reset.
type ResetState struct {
	State string `json:"state"`
	// Options is what the reset was asked with (JSON), so that an
	// interrupted one can be run again as it was asked.
	Options string    `json:"-"`
	Note    string    `json:"note,omitempty"`
	At      time.Time `json:"at"`
}

// clearProgress deletes the progress rows (progressTables) of keys.
func clearProgress(ctx context.Context, tx *sql.Tx, keys []string) error {
	for _, k := range keys {
		for _, t := range progressTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE exercise = ?`, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// BeginReset records, in one transaction, that a reset of exercise with
// options is running and clears the progress of keys (the exercise's own
// and any it keeps apart, like a hidden cause): whatever happens to the
// reset, nothing of the previous round is left to count.
func (s *Store) BeginReset(ctx context.Context, exercise string, keys []string, options string, at time.Time) error {
	return s.endReset(ctx, exercise, keys, ResetRunning, options, "", at)
}

// FailReset records that the reset failed, with why, and clears the
// progress of keys again (a part of the reset may have written some).
func (s *Store) FailReset(ctx context.Context, exercise string, keys []string, options, note string, at time.Time) error {
	return s.endReset(ctx, exercise, keys, ResetFailed, options, note, at)
}

// EndReset records how a reset that went through ended: state "" (a
// normal reset) forgets the record, ResetResumed and ResetDone keep note
// for the page.
func (s *Store) EndReset(ctx context.Context, exercise, state, note string, at time.Time) error {
	if state == "" {
		_, err := s.db.ExecContext(ctx, `DELETE FROM reset_state WHERE exercise = ?`, exercise)
		return fullErr(err)
	}
	return s.endReset(ctx, exercise, nil, state, "", note, at)
}

func (s *Store) endReset(ctx context.Context, exercise string, keys []string, state, options, note string, at time.Time) (err error) {
	// A full disk must read as one (datafs.IsFull) here too: the reset
	// that records itself first is refused with 507, not 500.
	defer func() { err = fullErr(err) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := clearProgress(ctx, tx, keys); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO reset_state (exercise, state, options, note, at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (exercise) DO UPDATE SET state = excluded.state, options = excluded.options, note = excluded.note, at = excluded.at`,
		exercise, state, options, note, nanos(at)); err != nil {
		return err
	}
	return tx.Commit()
}

// Reset returns the record of the exercise's last reset, if it left one.
func (s *Store) Reset(ctx context.Context, exercise string) (ResetState, bool, error) {
	var r ResetState
	var at sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT state, options, note, at FROM reset_state WHERE exercise = ?`, exercise).Scan(&r.State, &r.Options, &r.Note, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return ResetState{}, false, nil
	}
	if err != nil {
		return ResetState{}, false, err
	}
	r.At = fromNanos(at)
	return r, true, nil
}

// ResetsRunning lists the exercises whose reset was running when the lab
// stopped, by id.
func (s *Store) ResetsRunning(ctx context.Context) (map[string]ResetState, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT exercise, state, options, note, at FROM reset_state WHERE state = ?`, ResetRunning)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]ResetState{}
	for rows.Next() {
		var id string
		var r ResetState
		var at sql.NullInt64
		if err := rows.Scan(&id, &r.State, &r.Options, &r.Note, &at); err != nil {
			return nil, err
		}
		r.At = fromNanos(at)
		out[id] = r
	}
	return out, rows.Err()
}
