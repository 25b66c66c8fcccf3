package progress

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Pace is the cloud latency the last reset set for its exercise's
// classroom pace, and the latency it replaced. The cloud keeps its
// latency across a restart of the lab (it is saved with the cloud's
// state), so the pace is kept too: the next reset then still knows to put
// back what was there before.
type Pace struct {
	Set, Before time.Duration
}

// Pace returns the pace the last reset recorded; ok is false when it
// recorded none.
func (s *Store) Pace(ctx context.Context) (p Pace, ok bool, err error) {
	var set, before int64
	err = s.db.QueryRowContext(ctx, `SELECT s.value, b.value FROM meta s JOIN meta b
		ON s.key = 'pace_set' AND b.key = 'pace_before'`).Scan(&set, &before)
	if errors.Is(err, sql.ErrNoRows) {
		return Pace{}, false, nil
	}
	if err != nil {
		return Pace{}, false, err
	}
	return Pace{Set: time.Duration(set), Before: time.Duration(before)}, true, nil
}

// SetPace records p, or with nil forgets the pace.
func (s *Store) SetPace(ctx context.Context, p *Pace) (err error) {
	defer func() { err = fullErr(err) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key IN ('pace_set', 'pace_before')`); err != nil {
		return err
	}
	if p != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('pace_set', ?), ('pace_before', ?)`, int64(p.Set), int64(p.Before)); err != nil {
			return err
		}
	}
	return tx.Commit()
}
