package controllers

import (
	"context"
	"fmt"
	"slices"
)

// Add-ons (Config.Addons) run in the cluster, not in the manager: the lbc
// add-on is the AWS Load Balancer Controller's Deployment. The manager
// only switches them through Config.AddonSwitch, bounded by
// Tuning.SwitchTimeout, and reports what the lab tells it they are
// (SetAddon), so that the page, the exercises and the call log see the
// add-on as the cluster has it: after a restart on the same data dir and
// after a student's kubectl scale too.

// addon reports whether name is an add-on of this lab.
func (m *Manager) addon(name string) bool { return slices.Contains(m.cfg.Addons, name) }

// switchAddon asks the cluster for add-on name on or off and waits until it
// runs so. One add-on switch at a time.
func (m *Manager) switchAddon(name string, on bool) error {
	m.addonMu.Lock()
	defer m.addonMu.Unlock()
	m.mu.Lock()
	stopped := m.stopped
	m.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Tuning.SwitchTimeout)
	defer cancel()
	if err := m.cfg.AddonSwitch(ctx, name, on); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: the %s add-on is not %s after %s: %v", ErrBusy, name, map[bool]string{true: "running", false: "stopped"}[on], m.cfg.Tuning.SwitchTimeout, err)
		}
		return err
	}
	return nil
}

// SetAddon records what the cluster says of add-on name (on: it is meant
// to run), publishing a switch when that changed. An unknown name is
// ignored.
func (m *Manager) SetAddon(name string, on bool) {
	if !m.addon(name) {
		return
	}
	m.stMu.Lock()
	changed := m.on[name] != on
	m.on[name] = on
	m.stMu.Unlock()
	if changed {
		m.publish(name, on)
		m.log.Info("add-on switched", "addon", name, "enabled", on)
	}
}
