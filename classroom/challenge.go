package classroom

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/ccmlab/ccmlab/classroom/labclient"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/internal/labapi"
)

var causeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Challenge is GET /api/challenge: the diagnosis challenge's causes, as
// the lab it was asked of lists them (each with its label in ja and en).
type Challenge struct {
	Exercise string             `json:"exercise"`
	Causes   []labapi.CauseView `json:"causes"`
	AskedOf  string             `json:"askedOf"`
}

// causes reads the diagnosis challenge's causes from a lab.
func causes(ctx context.Context, lab *labclient.Client) ([]labapi.CauseView, error) {
	d, err := lab.Exercise(ctx, labapi.MysteryID)
	if err != nil {
		return nil, errNoChallenge(err)
	}
	if d.MysteryView == nil || len(d.Causes) == 0 {
		return nil, fmt.Errorf("its %s exercise lists no causes", labapi.MysteryID)
	}
	return d.Causes, nil
}

// errNoChallenge says a lab's ccmlab has no diagnosis challenge.
func errNoChallenge(err error) error {
	if labclient.IsNotFound(err) {
		return fmt.Errorf("this lab has no diagnosis challenge (exercise %s): its ccmlab is older than the challenge", labapi.MysteryID)
	}
	return err
}

// challengeCauses is GET /api/challenge: the causes the class's labs
// offer, asked of the first running lab.
func (c *Classroom) challengeCauses(w http.ResponseWriter, r *http.Request) {
	for s, lab := range c.runningLabs() {
		list, err := causes(r.Context(), lab)
		if err != nil {
			httpguard.WriteError(w, http.StatusBadGateway, fmt.Sprintf("asking %s's lab for its challenge: %v", s, err))
			return
		}
		writeJSON(w, Challenge{Exercise: labapi.MysteryID, Causes: list, AskedOf: s})
		return
	}
	httpguard.WriteError(w, http.StatusConflict, "no lab is running to ask for the challenge's causes: the list appears once a student's lab is ready")
}

// labCauses are the challenge's causes as the first running lab lists
// them; ok is false when no lab runs or none answers.
func (c *Classroom) labCauses(r *http.Request) (list []labapi.CauseView, askedOf string, ok bool) {
	for s, lab := range c.runningLabs() {
		if list, err := causes(r.Context(), lab); err == nil {
			return list, s, true
		}
	}
	return nil, "", false
}

// actionChallenge starts the diagnosis challenge in the chosen labs:
// {"cause": "<id>", "students": [...]}; no cause: each lab picks one at
// random.
func (c *Classroom) actionChallenge(w http.ResponseWriter, r *http.Request) {
	var req challengeRequest
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
		if list, asked, ok := c.labCauses(r); ok && !slices.ContainsFunc(list, func(k labapi.CauseView) bool { return k.ID == req.Cause }) {
			ids := make([]string, 0, len(list))
			for _, k := range list {
				ids = append(ids, k.ID)
			}
			httpguard.WriteError(w, http.StatusBadRequest, fmt.Sprintf("cause %q: %s's lab knows %s", req.Cause, asked, strings.Join(ids, ", ")))
			return
		}
	}
	res, err := c.each(r.Context(), req.Students, func(ctx context.Context, lab *labclient.Client) error {
		_, err := lab.Reset(ctx, labapi.MysteryID, labapi.ResetOptions{Cause: req.Cause})
		return errNoChallenge(err)
	})
	if err != nil {
		httpguard.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, res)
}
