package classroom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// challengeExercise is the lab's diagnosis challenge: its reset leaves a
// LoadBalancer Service that does not work, for one hidden cause, chosen by
// the reset's body {"cause": "<id>"} or at random ({}).
const challengeExercise = "mystery-pending"

// Cause is one cause the challenge can hide, with its label in both
// languages.
type Cause struct {
	ID string `json:"id"`
	JA string `json:"ja,omitempty"`
	EN string `json:"en,omitempty"`
}

var causeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// parseCauses reads the "causes" of GET /api/exercises/mystery-pending:
// each has an id and a label in ja and en, as {"ja":..,"en":..} under
// "label", "title" or "name", or as plain "ja"/"en" fields (or one
// string, then used for both).
func parseCauses(b []byte) ([]Cause, error) {
	var ex struct {
		Causes []map[string]json.RawMessage `json:"causes"`
	}
	if err := json.Unmarshal(b, &ex); err != nil {
		return nil, err
	}
	if ex.Causes == nil {
		return nil, errors.New("its mystery-pending exercise lists no causes")
	}
	out := []Cause{}
	for _, m := range ex.Causes {
		var c Cause
		_ = json.Unmarshal(m["id"], &c.ID)
		if c.ID == "" {
			continue
		}
		_ = json.Unmarshal(m["ja"], &c.JA)
		_ = json.Unmarshal(m["en"], &c.EN)
		for _, k := range []string{"label", "title", "name"} {
			raw, ok := m[k]
			if !ok || c.JA != "" && c.EN != "" {
				continue
			}
			var both struct{ JA, EN string }
			var one string
			if json.Unmarshal(raw, &both) == nil && (both.JA != "" || both.EN != "") {
				c.JA, c.EN = cmpOr(c.JA, both.JA), cmpOr(c.EN, both.EN)
			} else if json.Unmarshal(raw, &one) == nil && one != "" {
				c.JA, c.EN = cmpOr(c.JA, one), cmpOr(c.EN, one)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errNoChallenge says a lab's ccmlab has no diagnosis challenge.
func errNoChallenge(err error) error {
	var le *labError
	if errors.As(err, &le) && le.Code == http.StatusNotFound {
		return fmt.Errorf("this lab has no diagnosis challenge (exercise %s): its ccmlab is older than the challenge", challengeExercise)
	}
	return err
}

// challengeCauses is GET /api/challenge: the causes the class's labs
// offer, asked of the first running lab.
func (c *Classroom) challengeCauses(w http.ResponseWriter, r *http.Request) {
	for _, s := range c.cfg.Students {
		state, addr := c.backend.Status(s)
		if state != stateReady {
			continue
		}
		b, err := c.class.labRaw(r.Context(), s, addr, http.MethodGet, "/api/exercises/"+challengeExercise, nil)
		if err != nil {
			httpguard.WriteError(w, http.StatusBadGateway, fmt.Sprintf("asking %s's lab for its challenge: %v", s, errNoChallenge(err)))
			return
		}
		causes, err := parseCauses(b)
		if err != nil {
			httpguard.WriteError(w, http.StatusBadGateway, fmt.Sprintf("%s's lab: %v", s, err))
			return
		}
		writeJSON(w, map[string]any{"exercise": challengeExercise, "causes": causes, "askedOf": s})
		return
	}
	httpguard.WriteError(w, http.StatusConflict, "no lab is running to ask for the challenge's causes: the list appears once a student's lab is ready")
}

// labCauses are the challenge's causes as the first running lab lists
// them; ok is false when no lab runs or none answers.
func (c *Classroom) labCauses(r *http.Request) (causes []Cause, askedOf string, ok bool) {
	for _, s := range c.cfg.Students {
		state, addr := c.backend.Status(s)
		if state != stateReady {
			continue
		}
		b, err := c.class.labRaw(r.Context(), s, addr, http.MethodGet, "/api/exercises/"+challengeExercise, nil)
		if err != nil {
			continue
		}
		if causes, err := parseCauses(b); err == nil {
			return causes, s, true
		}
	}
	return nil, "", false
}

// actionChallenge starts the diagnosis challenge in the chosen labs:
// {"cause": "<id>", "students": [...]}; no cause: each lab picks one at
// random.
func (c *Classroom) actionChallenge(w http.ResponseWriter, r *http.Request) {
	var req struct {
		actionTarget
		Cause string `json:"cause"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Cause != "" && !causeRE.MatchString(req.Cause) {
		httpguard.WriteError(w, http.StatusBadRequest, fmt.Sprintf("cause %q: give a cause's id from GET /api/challenge, or none for a random one", req.Cause))
		return
	}
	if !c.knownStudents(w, req.Students) {
		return
	}
	if req.Cause != "" {
		// An unknown cause is refused here, not by each lab after the
		// portal said 200.
		if causes, asked, ok := c.labCauses(r); ok && !slices.ContainsFunc(causes, func(k Cause) bool { return k.ID == req.Cause }) {
			ids := make([]string, 0, len(causes))
			for _, k := range causes {
				ids = append(ids, k.ID)
			}
			httpguard.WriteError(w, http.StatusBadRequest, fmt.Sprintf("cause %q: %s's lab knows %s", req.Cause, asked, strings.Join(ids, ", ")))
			return
		}
	}
	body := map[string]string{}
	if req.Cause != "" {
		body["cause"] = req.Cause
	}
	res, err := c.each(r.Context(), req.Students, func(ctx context.Context, name, addr string) error {
		_, err := c.class.labRaw(ctx, name, addr, http.MethodPost, "/api/exercises/"+challengeExercise+"/reset", body)
		if err != nil {
			return errNoChallenge(err)
		}
		return nil
	})
	if err != nil {
		httpguard.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, res)
}
