package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ReplyError is an error reply from a server, such as "ERR unknown command".
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// Do sends one command to addr over a new connection and returns its reply:
// a string (simple or bulk; "" for a null bulk string), an int64, a []any,
// or a [ReplyError]. It is for setting up and watching test servers, not for
// speed.
func Do(addr string, args ...string) (any, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(c))
}

// DoString is Do for a command whose reply is a string; an error reply is
// returned as the error.
func DoString(addr string, args ...string) (string, error) {
	v, err := Do(addr, args...)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case ReplyError:
		return "", v
	}
	return "", fmt.Errorf("redistest: %s: reply %T, want a string", args[0], v)
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("redistest: empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return ReplyError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return []any(nil), err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redistest: unexpected reply %q", line)
}

// Info returns the fields of INFO section at addr, such as "role".
func Info(addr, section string) (map[string]string, error) {
	s, err := DoString(addr, "INFO", section)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string)
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m, nil
}

// WaitReplicated waits until every replica of the server at addr has
// acknowledged all it had written when called (replication is
// asynchronous: a master killed right after a write may take it with it),
// or fails after timeout. It needs at least one online replica.
func WaitReplicated(addr string, timeout time.Duration) error {
	info, err := Info(addr, "replication")
	if err != nil {
		return err
	}
	want, err := strconv.ParseInt(info["master_repl_offset"], 10, 64)
	if err != nil {
		return fmt.Errorf("redistest: master_repl_offset of %s: %v", addr, err)
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(5 * time.Millisecond) {
		behind, replicas := 0, 0
		for k, v := range info {
			if !strings.HasPrefix(k, "slave") || k == "slave_read_repl_offset" || k == "slave_repl_offset" {
				continue
			}
			if _, err := strconv.Atoi(strings.TrimPrefix(k, "slave")); err != nil {
				continue
			}
			replicas++
			off := int64(-1)
			for _, f := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(f, "offset="); ok {
					off, _ = strconv.ParseInt(n, 10, 64)
				}
			}
			if !strings.Contains(v, "state=online") || off < want {
				behind++
			}
		}
		if replicas > 0 && behind == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: %d of %d replicas of %s behind offset %d after %v", behind, replicas, addr, want, timeout)
		}
		if info, err = Info(addr, "replication"); err != nil {
			return err
		}
	}
}
