package sluicegrpc

import (
	"net/http"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// messageStream is a server stream whose received messages are decided by
// the limiter's message rules ([WithMessageRules]).
type messageStream struct {
	grpc.ServerStream
	l          *Limiter
	fullMethod string
	req        *http.Request // the call as the rules read it: made once

	mu      sync.Mutex
	refusal error // the error a refused or undecided message ended the stream with
}

// RecvMsg receives the next message and decides it by the message rules.
// A message refused, or one the limiter could not decide, is dropped: the
// stream's RecvMsg and SendMsg return the refusal from then on, and its
// trailer carries the refusal's metadata.
func (s *messageStream) RecvMsg(m any) error {
	if err := s.ended(); err != nil {
		return err
	}
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err // io.EOF or the transport's: nothing to charge
	}
	ctx := s.Context()
	if s.req == nil {
		s.req = newRequest(ctx, s.fullMethod, s.l.pattern(s.fullMethod))
	}
	o := s.l.decider.Check(s.l.cfg.messages.Current(), s.req, nil)
	header, trailer, err := s.l.answer(ctx, s.fullMethod, o)
	o.Finish(ctx, 0)
	if err == nil {
		return nil
	}
	// The response header may be out already: the refusal's metadata
	// (retry-after, the rate-limit fields, the pushback) goes in the
	// trailer, which is always still to come.
	s.ServerStream.SetTrailer(metadata.Join(header, trailer))
	s.mu.Lock()
	s.refusal = err
	s.mu.Unlock()
	return err
}

// SendMsg sends m, unless a message ended the stream: then it returns the
// refusal, and the client receives nothing more.
func (s *messageStream) SendMsg(m any) error {
	if err := s.ended(); err != nil {
		return err
	}
	return s.ServerStream.SendMsg(m)
}

// ended returns the error a message ended the stream with, or nil.
func (s *messageStream) ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusal
}
