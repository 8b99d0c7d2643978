"""The channels as the composition root gives them to the engine (shared/channels.py, services/app.py)."""

from __future__ import annotations

import pytest

from avalon.services.channels import CHANNELS, channel_map
from avalon.shared.channels import ChannelMap


def test_each_player_id_names_the_channel_that_minted_it():
    channels = channel_map()
    assert channels.channel_of("tg:42") == "telegram"
    assert channels.channel_of("mail:ann@example.org") == "email"
    assert channels.channel_of("test:1") == "test"
    assert channels.channel_of("@scheduler") is None and channels.channel_of("zz:1") is None


def test_every_registered_channel_is_a_routed_gateway_and_test_and_cli_are_routed_too():
    channels = channel_map()
    assert channels.gateways == {spec.name for spec in CHANNELS}
    assert channels.routed == channels.gateways | {"test", "cli"}
    assert not channels.knows("scheduler") and not channels.knows("discord")


@pytest.mark.parametrize("bad", [
    dict(routed=frozenset({"Tele gram"})),
    dict(routed=frozenset({"a.b"})),
    dict(schemes={"tg": "telegram"}),  # named, not routed
    dict(routed=frozenset({"email"}), gateways=frozenset({"telegram"})),
])
def test_a_map_with_a_bad_name_or_an_unrouted_channel_is_refused(bad):
    with pytest.raises(ValueError):
        ChannelMap(**bad)
