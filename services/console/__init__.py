"""The console channel: the printer behind ``avalon demo``, a channel on the delivery core like
Telegram and email (its group's and players' messages as plain text, in the order they were sent),
with scripted players as its inbound side."""
