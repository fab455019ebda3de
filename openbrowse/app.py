"""Composition root: ``create_app(settings)`` wires every service and owns them through the lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from openbrowse import __version__
from openbrowse.api.auth import Authenticator
from openbrowse.api.body_limit import BodyLimit
from openbrowse.api.dashboard import install_dashboard
from openbrowse.api.docs_page import install_docs
from openbrowse.api.errors import install_error_handlers
from openbrowse.api.file_urls import FileUrlSigner
from openbrowse.api.mcp_endpoint import install_mcp, mcp_lifespan
from openbrowse.api.openapi_docs import GUARDED, finish_openapi
from openbrowse.api.origin_guard import BrowserGuard, OriginPolicy
from openbrowse.api.routes import browsers, codeview, events, health, live, metrics, profiles, sessions
from openbrowse.api.routes.control import install_control_routes
from openbrowse.api.routes.files import install_file_routes
from openbrowse.api.routes.workspaces import install_workspace_routes
from openbrowse.api.stream_places import StreamPlaces
from openbrowse.api.view_tokens import ViewTokens
from openbrowse.bootstrap import empty_temp_dir, prepare_process_environment
from openbrowse.cluster.presence import NodePresence, node_load, stop_this_process
from openbrowse.cluster.reaper import NodeReaper
from openbrowse.config import Settings
from openbrowse.domain.clock import utc_now
from openbrowse.errors import ConfigError, InvalidRequest
from openbrowse.file_modes import log_loose_files
from openbrowse.llm.catalog import EFFORTS, MODELS, resolve_model
from openbrowse.loop_lag import LoopLagMonitor
from openbrowse.network.policy import NetworkRules
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.activity import ActivityBoard
from openbrowse.sessions.admission import QueueAdmission
from openbrowse.sessions.browsers import BrowserService
from openbrowse.sessions.control import ControlService
from openbrowse.sessions.file_area import RETENTION_SWEEP_S, FileAreas
from openbrowse.sessions.lazy_browser_tools import LazyBrowserTools
from openbrowse.sessions.live import LiveTargets
from openbrowse.sessions.maintenance import Maintenance, MaintenanceDrain
from openbrowse.sessions.manager import SessionManager
from openbrowse.sessions.metrics import COUNTED_SESSION_FIELDS, ServiceMetrics, StateSources
from openbrowse.sessions.policy import SessionPolicy
from openbrowse.sessions.proxies import ProxyChooser
from openbrowse.sessions.runtime import EngineLoader, WorkerRuntime
from openbrowse.sessions.sweeper import Sweeper
from openbrowse.sessions.takeover import TakeoverTokens
from openbrowse.sessions.webhooks import WebhookDelivery
from openbrowse.slots.browser_looks import browser_looks
from openbrowse.slots.confinement import report_sandbox
from openbrowse.slots.pool import SlotPool
from openbrowse.slots.slot_disk import report_disk_cap
from openbrowse.store.browsers import BrowserRepo
from openbrowse.store.change_notices import ChangeNotices
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.nodes import NodeRepo
from openbrowse.store.outbox import SESSION_EVENT_FIELDS, WebhookOutbox
from openbrowse.store.ownership import NodeOwnership
from openbrowse.store.profiles import ProfileRepo
from openbrowse.store.sessions import SessionRepo
from openbrowse.store.target import store_target
from openbrowse.store.workspaces import WorkspaceRepo
from openbrowse.workspaces.service import WorkspaceService

LOOPBACK_TIMEOUT = 15.0  # noVNC assets and Chromium's /json/version, all on 127.0.0.1


def _check_default_model(settings: Settings) -> None:
    if settings.DEFAULT_MODEL:
        try:
            resolve_model(settings.DEFAULT_MODEL)
        except InvalidRequest as exc:
            raise ConfigError(f"DEFAULT_MODEL: {exc.message}") from exc


def live_url_for(settings: Settings, tokens: ViewTokens, target_id: str, *, fresh: bool = False) -> str:
    """The live-view path of a session or raw browser, with its view token when auth is on (spec §4.10, §21.4).

    ``fresh``: a new browser came up for this id, so it gets a new token (the old one stops working)."""
    url = f"/vnc/{target_id}/view?path=vnc/{target_id}/websockify"
    if settings.auth_enabled:
        url += f"&token={tokens.issue(target_id) if fresh else tokens.current(target_id)}"
    return url


def takeover_url_for(settings: Settings, tokens: ViewTokens, target_id: str, token: str) -> str:
    """The live view with input enabled for this link alone (spec §21.5): ``liveUrl`` plus ``takeover=<token>``."""
    return f"{live_url_for(settings, tokens, target_id)}&takeover={token}"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.load()
    _check_default_model(settings)
    browser_looks(settings)  # an unknown BROWSER_TIMEZONE stops the start, not every slot
    ProxyChooser(settings).hold_pool_secrets()  # a PROXY_POOL that does not read is a ConfigError (spec §28.1)
    prepare_process_environment(settings.data_dir)  # also when served by `uvicorn --factory`, not only the CLI

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            app.state.loop_lag = await stack.enter_async_context(LoopLagMonitor())
            app.state.sandbox_problem = await asyncio.to_thread(report_sandbox, settings)
            db = await stack.enter_async_context(
                Database(store_target(settings), pool_size=settings.DATABASE_POOL_SIZE)
            )
            app.state.database_kind, app.state.database_ping = db.kind, db.ping  # /health (spec §26.1)
            app.state.file_warnings = await asyncio.to_thread(log_loose_files, settings)  # spec §25.4
            app.state.file_warnings += report_disk_cap(app.state.sandbox_problem)
            ownership = NodeOwnership(None if db.single_process else settings.node[0])  # spec §26.3, §26.5
            session_repo = SessionRepo(db, ownership=ownership)
            feed_repo = FeedRepo(db, ownership=ownership)
            if db.kind == "postgresql":  # hear the other nodes' writes (spec §26.4)
                notices = await stack.enter_async_context(ChangeNotices(db.target))
                session_repo.follow(notices)
                feed_repo.follow(notices)
            activity = app.state.activity = ActivityBoard()
            session_repo.listen(activity.touch)
            feed_repo.listen(activity.touch)
            # webhooks (spec §22.4): written with the change they announce, sent by a worker that outlives the runs
            outbox = WebhookOutbox(db, settings.WEBHOOK_URL)
            # entered below, after the webhook worker (so closed before it); its figures are read at scrape time only
            pool = SlotPool(settings, base_index=settings.SLOT_BASE_INDEX, spares=settings.PREWARM_SLOTS)
            service_metrics = app.state.metrics = ServiceMetrics(  # GET /metrics (spec §19.3)
                StateSources(session_repo.count_by_status, pool.stats, outbox.pending_count)
            )
            session_repo.on_change(outbox.session_changed, fields=SESSION_EVENT_FIELDS)
            session_repo.watch(service_metrics.session_changed, fields=COUNTED_SESSION_FIELDS)
            webhooks = await stack.enter_async_context(
                WebhookDelivery(
                    outbox, settings, NetworkRules.from_settings(settings), on_result=service_metrics.webhook_result
                )
            )
            session_repo.listen(lambda _session_id: webhooks.wake())
            browser_repo = BrowserRepo(db, ownership=ownership)
            browser_repo.on_end(outbox.browser_ended)
            browser_repo.watch_ends(service_metrics.browser_ended)
            browser_repo.watch_ends(lambda _browser: webhooks.wake())
            await stack.enter_async_context(pool)
            node_id, node_url = settings.node
            app.state.presence = await stack.enter_async_context(  # spec §26.2: left after the runs have ended
                NodePresence(
                    NodeRepo(db),
                    node_id=node_id,
                    url=node_url,
                    lease_s=settings.NODE_LEASE_S,
                    load=lambda: node_load(pool.stats(), draining=maintenance.draining),
                    ownership=ownership,
                    on_fenced=None if db.single_process else stop_this_process,
                )
            )
            # Only now does the pool's run lock say the data dir is ours: a second instance never empties it.
            stack.push_async_callback(asyncio.to_thread, empty_temp_dir, settings.data_dir)
            await asyncio.to_thread(empty_temp_dir, settings.data_dir)
            profile_service = app.state.profiles = ProfileService(ProfileRepo(db))
            workspaces = app.state.workspaces = WorkspaceService(settings, WorkspaceRepo(db))  # spec §27
            if await asyncio.to_thread(settings.profiles_dir.is_dir):  # jar files of an install from before
                await profile_service.adopt_files(settings.profiles_dir)
            engines = await stack.enter_async_context(
                EngineLoader(settings, session_repo, feed_repo, activity, profiles=profile_service)
            )
            runtime = WorkerRuntime(
                settings=settings,
                sessions=session_repo,
                feed=feed_repo,
                pool=pool,
                make_engine=engines.make,
                policy=SessionPolicy(
                    settings, lambda session_id: live_url_for(settings, view_tokens, session_id, fresh=True)
                ),
                takeovers=takeovers,  # a paused session opens a takeover link (spec §21.5)
                queue_position=pool.queue_position,
            )
            admission = QueueAdmission(settings.MAX_QUEUED, pool)
            manager = SessionManager(
                settings, session_repo, feed_repo, ProfileRepo(db), runtime, admission=admission, workspaces=workspaces
            )
            app.state.manager = await stack.enter_async_context(manager)
            app.state.pool = pool
            raw_browsers = BrowserService(
                browser_repo,
                profile_service,
                pool,
                live_url=lambda browser_id: live_url_for(settings, view_tokens, browser_id),
                files_dir=settings.browsers_dir,
                admission=admission,
                takeovers=takeovers,
                takeover_url=lambda browser_id, token: takeover_url_for(settings, view_tokens, browser_id, token),
                settings=settings,
            )
            app.state.browsers = await stack.enter_async_context(raw_browsers)
            if not db.single_process:  # a survivor ends the work of nodes that stopped heartbeating (spec §26.5)
                await stack.enter_async_context(
                    NodeReaper(
                        NodeRepo(db),
                        app.state.presence,
                        end_sessions=manager.adopt,
                        end_browsers=lambda ids: browser_repo.stop_adopted(ids, finished_at=utc_now()),
                    )
                )
            # MCP browser tools: one shared Chromium on its own slot, one context per MCP session (spec §23.3);
            # built with Playwright on the first browser tool call
            app.state.browser_tools = await stack.enter_async_context(
                LazyBrowserTools(settings, pool.ledger, raw_browsers)
            )
            # a drain in progress ends before what it drains closes
            await stack.enter_async_context(MaintenanceDrain(maintenance, manager, raw_browsers, activity.touch_all))
            app.state.live_targets = LiveTargets(manager, raw_browsers)
            controls = ControlService(settings, manager, raw_browsers, feed_repo)
            app.state.controls = await stack.enter_async_context(controls)
            runtime.control = controls
            app.state.file_areas = file_areas = FileAreas(settings, manager, raw_browsers)  # spec §22.2, §22.3
            await stack.enter_async_context(Sweeper(file_areas.sweep_expired, interval=RETENTION_SWEEP_S))
            app.state.loopback_http = await stack.enter_async_context(
                httpx.AsyncClient(timeout=LOOPBACK_TIMEOUT, trust_env=False)
            )
            # closed first: its tools use the rest
            await stack.enter_async_context(mcp_lifespan(app.state.mcp, app.state.browser_tools, app.state.mcp_gate))
            yield

    app = FastAPI(title="OpenBrowse", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.settings = settings
    view_tokens = app.state.view_tokens = ViewTokens()  # the tokens in liveUrl (spec §21.4)
    app.state.authenticator = authenticator = Authenticator(settings, view_tokens=view_tokens)
    maintenance = app.state.maintenance = Maintenance(settings.SHUTDOWN_GRACE_S)  # SIGTERM drains (spec §21.6)
    # signed links to a session's or browser's files; the key never enters a sandbox (spec §22.3)
    app.state.file_urls = (
        FileUrlSigner.for_cluster(settings.CLUSTER_SECRET)  # valid on every node (spec §26.4)
        if settings.CLUSTER_SECRET
        else FileUrlSigner.from_key_file(settings.data_dir / "secrets" / "file-url.key")
    )
    takeovers = app.state.takeovers = TakeoverTokens()  # who may send input to a live view (spec §21.5)
    authenticator.takeover_allows = takeovers.allows  # a takeover link also lets its holder watch
    app.state.event_streams = StreamPlaces(settings.EVENTS_MAX_STREAMS_PER_SESSION, settings.EVENTS_MAX_STREAMS)
    app.state.notice_streams = StreamPlaces(settings.EVENTS_MAX_STREAMS_PER_SESSION, settings.EVENTS_MAX_STREAMS)
    app.add_middleware(BodyLimit)  # innermost of the three: refused bodies still get CORS headers (spec §25.1)
    policy = OriginPolicy.from_settings(settings)
    if policy.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=sorted(policy.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["Retry-After"],
        )
    app.add_middleware(BrowserGuard, policy=policy)  # added last, so it runs first (spec §2.2)
    install_error_handlers(app)
    app.include_router(health.router, responses=GUARDED)
    app.include_router(metrics.router, responses=GUARDED)
    # each /v3 router straight into the app: every level of nested routers matches a request's path again
    v3_routers = (
        sessions.router,
        sessions.hand_back_router,
        events.router,
        browsers.router,
        browsers.cdp_router,
        browsers.hand_back_router,
    )
    for v3_router in (*v3_routers, profiles.router):
        app.include_router(v3_router, prefix="/v3", responses=GUARDED)
    install_control_routes(app)
    install_file_routes(app)
    install_workspace_routes(app)
    install_mcp(app)
    app.include_router(live.router, responses=GUARDED)
    app.include_router(codeview.router, responses=GUARDED)
    install_dashboard(app, models=sorted(MODELS), efforts=EFFORTS)
    install_docs(app, enabled=settings.docs_enabled)  # local Swagger UI, or none (spec §25.2)
    finish_openapi(app)
    return app
