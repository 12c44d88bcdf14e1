package devcluster

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// waitOK polls url with c until it answers 200, the process whose exit
// closes exited has ended (exitErr says how), or timeout passes: the probe a
// component the framework starts must pass before a suite uses it.
func waitOK(ctx context.Context, c *http.Client, url string, timeout time.Duration, exited <-chan struct{}, exitErr func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := c.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before %s answered: %v", url, exitErr())
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 within %v: %w", url, timeout, ctx.Err())
		case <-tick.C:
		}
	}
}
