"""The delivery core every channel shares: a durable outbox of rendered messages, the marks of
events already handled, and each game's memory, committed together so that an event is
acknowledged only once what it asked for is safely stored to be sent."""
