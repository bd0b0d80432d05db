package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// deleteSession deletes the server's session of notebook name, which shuts its kernel down (a
// kernel outlives the page otherwise), and waits until the kernel is gone.
func deleteSession(o options, name string) error {
	var sessions []struct {
		ID     string `json:"id"`
		Path   string `json:"path"`
		Kernel struct {
			ID string `json:"id"`
		} `json:"kernel"`
	}
	if err := call(o, http.MethodGet, "/api/sessions", &sessions); err != nil {
		return err
	}
	for _, s := range sessions {
		if s.Path != name {
			continue
		}
		if err := call(o, http.MethodDelete, "/api/sessions/"+s.ID, nil); err != nil {
			return err
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var kernels []struct {
				ID string `json:"id"`
			}
			if err := call(o, http.MethodGet, "/api/kernels", &kernels); err != nil {
				return err
			}
			alive := false
			for _, k := range kernels {
				alive = alive || k.ID == s.Kernel.ID
			}
			if !alive {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("kernel %s still running 30 s after its session was deleted", s.Kernel.ID)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

// client talks to the local notebook server; a request that takes longer is a hung server.
var client = &http.Client{Timeout: time.Minute}

// call sends a REST request to the server with its token and decodes the JSON answer into v.
func call(o options, method, path string, v any) error {
	req, err := http.NewRequest(method, o.server+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+o.token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
