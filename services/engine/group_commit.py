"""Group commit: the commands of different games that are ready at the same moment share one
transaction (SQLAlchemy costs milliseconds per transaction; a row in an executemany costs
hundredths of a millisecond)."""

from __future__ import annotations

import asyncio

from .store import Outgoing, Store


class GroupCommit:
    """Group commit: the commands of different games that are ready at the same moment are
    committed in one transaction. Each handler still waits for its own commit (and holds its
    game's lock meanwhile), so nothing is acknowledged or published before it is durable."""

    def __init__(self, store: Store, max_batch: int = 256, parallel: int = 1) -> None:
        self.store = store
        self.max_batch = max_batch
        self.parallel = parallel  # batches in flight at once: a commit waits on the disk, not the CPU
        self._pending: list[tuple[dict, asyncio.Future]] = []
        self._running = 0

    async def commit(self, request: dict) -> list[Outgoing]:
        future = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._running < self.parallel:
            self._running += 1
            asyncio.create_task(self._run())
        return await future

    async def _run(self) -> None:
        try:
            await asyncio.sleep(0)  # let the other handlers that are ready join this batch
            while self._pending:
                batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch:]
                await self._commit_batch(batch)
        finally:
            self._running -= 1

    async def _commit_batch(self, batch: list[tuple[dict, asyncio.Future]]) -> None:
        try:
            results = await self.store.commit_many([request for request, _ in batch])
        except Exception as error:
            if len(batch) == 1:
                _settle(batch[0][1], error=error)
                return
            for request, future in batch:  # one by one, to single out the duplicate or conflict
                try:
                    _settle(future, (await self.store.commit_many([request]))[0])
                except Exception as single_error:  # noqa: BLE001 - handed to the waiting handler
                    _settle(future, error=single_error)
            return
        for (_, future), result in zip(batch, results):
            _settle(future, result)


def _settle(future: asyncio.Future, result=None, error: BaseException | None = None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
