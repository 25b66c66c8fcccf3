package exercises

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

// ErrResetStopped is in the chain of a reset's error once the reset had
// begun to change the lab: it stopped part way, and the exercise is not
// checked until another reset goes through (resetWentThrough). An error
// without it changed nothing (a refused option, a full disk met by the
// first record). Its text adds nothing to the error's.
var ErrResetStopped = errors.New("the reset stopped part way")

type stoppedError struct{ err error }

func (e *stoppedError) Error() string   { return e.err.Error() }
func (e *stoppedError) Unwrap() []error { return []error{e.err, ErrResetStopped} }
func stopped(err error) error           { return &stoppedError{err: err} }

// resetWentThrough refuses to check an exercise whose last reset failed
// or is still to be finished: its lab is not the exercise's start, so a
// step could pass, or fail, for the wrong reason. Call with mu.
func (s *Service) resetWentThrough(ctx context.Context, id string) error {
	rs, ok, err := s.cfg.Store.Reset(ctx, id)
	if err != nil || !ok {
		return err
	}
	switch rs.State {
	case progress.ResetFailed:
		return fmt.Errorf("%w: the last reset of %s failed (%s): reset it again", ErrUnavailable, id, decodeNote(rs.Note).EN)
	case progress.ResetRunning:
		return fmt.Errorf("%w: the reset of %s was interrupted and is not finished yet", ErrUnavailable, id)
	}
	return nil
}

// FinishInterrupted runs again every reset the progress store says was
// running when the lab stopped (a crash or kill in the middle leaves the
// lab half reset: the mystery's Service deleted, no cause planted), with
// the options it was asked with, and records on the exercise that it was
// finished at start. Run calls it first; it returns the first error.
func (s *Service) FinishInterrupted(ctx context.Context) error {
	running, err := s.cfg.Store.ResetsRunning(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(running))
	for id := range running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		rs := running[id]
		ex, ok := s.byID[id]
		if !ok {
			// An exercise this version no longer has: forget the record.
			errs = append(errs, s.cfg.Store.EndReset(ctx, id, "", "", s.cfg.Now()))
			continue
		}
		if why := s.availability(ex); why != "" {
			why := s.unavailable(ex)
			note := i18n.Text{
				JA: "ラボがこのリセットの途中で止まりましたが、このラボではこの演習を実行できません: " + why.JA,
				EN: "the lab stopped in the middle of this reset, and this lab cannot run the exercise: " + why.EN,
			}
			errs = append(errs, s.cfg.Store.FailReset(ctx, id, progressKeys(id), rs.Options, encodeNote(note), s.cfg.Now()))
			continue
		}
		var opts ResetOptions
		if rs.Options != "" {
			if err := json.Unmarshal([]byte(rs.Options), &opts); err != nil {
				opts = ResetOptions{}
			}
		}
		note := i18n.Textf("ラボが %[1]s のリセットの途中 (%[2]s) で止まったため、ラボが再び起動したときにリセットを最後まで済ませました",
			"the lab stopped in the middle of the reset of %[1]s at %[2]s; the reset was finished when the lab started again",
			id, rs.At.Format(time.RFC3339))
		s.cfg.Logger.Warn("finishing an interrupted reset", "exercise", id)
		s.mu.Lock()
		err := s.recordedReset(ctx, ex, opts, note)
		s.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("finishing the interrupted reset of %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// A reset note is kept in the progress store as the JSON of an i18n.Text,
// so that GET /api/exercises/{id}?lang=ja says it in Japanese. A note
// written before notes had two languages reads as itself in both.
func encodeNote(t i18n.Text) string {
	b, err := json.Marshal(t)
	if err != nil {
		return t.EN
	}
	return string(b)
}

func decodeNote(s string) i18n.Text {
	var t i18n.Text
	if strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &t) == nil && t.Complete() {
		return t
	}
	return i18n.Text{JA: s, EN: s}
}

// failedNote says why a reset failed. The error is the program's own
// (what failed and the apiserver's or the cloud's answer): the Japanese
// text quotes it as printed, the way a text quotes a log line, and says in
// Japanese what happened; the English note is the error, as before.
func failedNote(err error, settle time.Duration) i18n.Text {
	ja := fmt.Sprintf("リセットの途中でラボの操作がエラーになりました。「%s」", err)
	if errors.Is(err, context.DeadlineExceeded) {
		ja = fmt.Sprintf("ラボが %s 以内に演習の開始状態になりませんでした。「%s」", settle, err)
	}
	return i18n.Text{JA: ja, EN: err.Error()}
}
