--- Starting the server (one client per repository root) and talking to it.
local M = {}

M.name = "ctxls"

-- Neovim 0.11 made client functions methods (client:request); 0.10 has plain fields.
local has_client_methods = vim.fn.has("nvim-0.11") == 1

--- Folders whose files the server never indexes: version control's own
--- (git's COMMIT_EDITMSG when Neovim is git's editor) and the store.
local NEVER_INDEXED_DIRS = { [".git"] = true, [".hg"] = true, [".svn"] = true, [".ctxls"] = true }

--- The repository root of a file buffer, or nil for buffers that are not
--- files and for files inside .git/ (or .hg/, .svn/, .ctxls/): the root
--- found from there is the repository's, which never indexes them.
---@param bufnr integer
---@param root_markers string[]
---@return string|nil
function M.find_root(bufnr, root_markers)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].buftype ~= "" or name == "" then
    return nil
  end
  for _, part in ipairs(vim.split(vim.fs.normalize(name), "/", { plain = true })) do
    if NEVER_INDEXED_DIRS[part] then
      return nil
    end
  end
  return vim.fs.root(bufnr, root_markers)
end

--- Ids of the clients this plugin stopped (:CtxRestart): before Neovim 0.12
--- a client counts as stopped only once its server has exited.
local stopped_by_plugin = {}

--- Repository root → how its server exited ({ code, signal }), for servers
--- that exited on their own (a crash, a kill) and were not started again.
local exits = {}

--- Client id → the PID of its server process (M.server_pid).
local server_pids = {}

--- The PID of the server process of a client just initialized: the one
--- child of Neovim running the server command's program that no other
--- client has. Neovim's client does not say its process's PID; nil when
--- this cannot tell (several such children, a wrapper between).
---@param client vim.lsp.Client
---@return integer|nil
local function find_server_pid(client)
  local cmd = client.config.cmd
  if type(cmd) ~= "table" or type(cmd[1]) ~= "string" then
    return nil
  end
  -- A process's name is its program's file name, cut to 15 bytes (Linux).
  local program = vim.fs.basename(cmd[1]):sub(1, 15)
  local claimed = {}
  for _, pid in pairs(server_pids) do
    claimed[pid] = true
  end
  local found
  for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
    local proc = vim.api.nvim_get_proc(pid)
    if proc and proc.name == program and not claimed[pid] then
      if found then
        return nil
      end
      found = pid
    end
  end
  return found
end

--- The PID of `client`'s server process, when it could be told.
---@param client vim.lsp.Client
---@return integer|nil
function M.server_pid(client)
  return server_pids[client.id]
end

--- What to do about a server that does not answer: resume it if it was
--- stopped, end it if it hangs (what the CLI says of a daemon that does not
--- answer, docs/protocol.md).
---@param client vim.lsp.Client
---@return string
function M.not_answering_advice(client)
  local pid = M.server_pid(client)
  if pid then
    return ("it may be stopped (resume it: `kill -CONT %d`) or hung (end it: `kill %d`, then "
      .. ":CtxRestart)"):format(pid, pid)
  end
  return "it may be stopped (resume it: `kill -CONT PID`) or hung (end it: `kill PID`, then "
    .. ":CtxRestart); PID: the `ctxls serve` process under this Neovim (`ps`)"
end

local function client_root(client)
  local root = client.root_dir or client.config.root_dir
  return root and vim.fs.normalize(root)
end

--- Client id → buffer → the file name the server has the buffer under: the
--- name it was opened with (attach), then the name of each write (Neovim
--- reopens a buffer written under a new name, :saveas, with didClose and
--- didOpen). A rename alone (`:file NAME`) tells the server nothing.
local served_names = {}

local function remember_served_name(client_id, bufnr)
  served_names[client_id] = served_names[client_id] or {}
  served_names[client_id][bufnr] = vim.api.nvim_buf_get_name(bufnr)
end

vim.api.nvim_create_autocmd("BufWritePost", {
  group = vim.api.nvim_create_augroup("ctxls.served_names", { clear = true }),
  callback = function(event)
    for _, client in ipairs(M.all_clients(event.buf)) do
      if served_names[client.id] then
        remember_served_name(client.id, event.buf)
      end
    end
  end,
})

--- Whether the server has `bufnr` as the file it is named now, so a position
--- in it means something there: attached, not renamed since it was sent, and
--- inside the client's root (a file written outside it, `:saveas`, stays
--- attached, but the server does not index it).
---@param client vim.lsp.Client
---@param bufnr integer
function M.serves_buffer(client, bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or not client.attached_buffers[bufnr] then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = client_root(client)
  if name == "" or not root or (served_names[client.id] or {})[bufnr] ~= name then
    return false
  end
  local prefix = root:gsub("/$", "") .. "/"
  return vim.fs.normalize(name):sub(1, #prefix) == prefix
end

--- Whether Neovim counts the client as stopped: vim.lsp.start does not reuse it.
---@param client vim.lsp.Client
function M.neovim_is_stopped(client)
  if has_client_methods then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- Whether the client is stopped or being stopped: no command uses it.
---@param client vim.lsp.Client
function M.is_stopped(client)
  return stopped_by_plugin[client.id] == true or M.neovim_is_stopped(client)
end

--- Every ctxls client, starting and stopping ones included: vim.lsp.get_clients
--- leaves out a client whose `initialize` is unanswered unless asked with
--- `_uninitialized` (Neovim 0.11+; 0.10 ignores the key and lists a client
--- once it is initialized).
---@param bufnr integer|nil only the clients attached to this buffer
---@return vim.lsp.Client[]
function M.all_clients(bufnr)
  return vim.lsp.get_clients({ name = M.name, bufnr = bufnr, _uninitialized = true })
end

--- The clients that run or are starting (not stopped), initialized ones first.
---@param clients vim.lsp.Client[]
local function live(clients)
  local running = vim.tbl_filter(function(client)
    return not M.is_stopped(client)
  end, clients)
  table.sort(running, function(a, b)
    return a.initialized and not b.initialized
  end)
  return running
end

--- Whether the plugin starts a server for a buffer of this filetype.
local function wanted_filetype(bufnr, options)
  return not options.filetypes or vim.tbl_contains(options.filetypes, vim.bo[bufnr].filetype)
end

--- The buffers a command looks for its client in: the current one, then the
--- previous window's (so commands work from the quickfix window).
---@return integer[]
function M.context_buffers()
  local buffers = { vim.api.nvim_get_current_buf() }
  local previous_window = vim.fn.win_getid(vim.fn.winnr("#"))
  if previous_window ~= 0 then
    table.insert(buffers, vim.api.nvim_win_get_buf(previous_window))
  end
  return buffers
end

---@class ctxls.Lookup
---@field client vim.lsp.Client|nil a client ready for requests
---@field starting vim.lsp.Client|nil a client whose server has not answered `initialize` yet
---@field root string|nil a repository a buffer is in whose server does not run

--- Which client answers for `buffers` (M.context_buffers()): the one
--- attached to the first buffer that has one, else the client of that
--- buffer's repository (a file with a filetype the server was not started
--- for), else, when neither buffer is in a repository (a scratch buffer,
--- the quickfix list), any client. A buffer in a repository whose server
--- does not run stops the search: another repository's server would answer
--- from the wrong index.
---@param buffers integer[]
---@param options ctxls.Options
---@return ctxls.Lookup
function M.lookup(buffers, options)
  local function found(clients)
    local client = live(clients)[1]
    if client then
      return client.initialized and { client = client } or { starting = client }
    end
  end
  for _, bufnr in ipairs(buffers) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      local attached = found(M.all_clients(bufnr))
      if attached then
        return attached
      end
      local root = M.find_root(bufnr, options.root_markers)
      if root then
        root = vim.fs.normalize(root)
        local of_root = found(vim.tbl_filter(function(client)
          return client_root(client) == root
        end, M.all_clients()))
        if of_root then
          return of_root
        end
        if wanted_filetype(bufnr, options) then
          return { root = root }
        end
      end
    end
  end
  return found(M.all_clients()) or {}
end

--- The client for a statusline: the one a command would use, else a client
--- being stopped (shown as such).
---@param options ctxls.Options
---@return vim.lsp.Client|nil
function M.get(options)
  local buffers = M.context_buffers()
  local found = M.lookup(buffers, options)
  if found.client or found.starting then
    return found.client or found.starting
  end
  for _, bufnr in ipairs(buffers) do
    local client = vim.api.nvim_buf_is_valid(bufnr) and M.all_clients(bufnr)[1]
    if client then
      return client
    end
  end
  return M.all_clients()[1]
end

--- Roots of the loaded buffers the plugin would serve whose server does not
--- run (it exited, failed to start, or was stopped).
---@param options ctxls.Options
---@return string[]
function M.unserved_roots(options)
  local served, unserved = {}, {}
  for _, client in ipairs(live(M.all_clients())) do
    served[client_root(client) or ""] = true
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and wanted_filetype(bufnr, options) then
      local root = M.find_root(bufnr, options.root_markers)
      root = root and vim.fs.normalize(root)
      if root and not served[root] then
        served[root] = true
        table.insert(unserved, root)
      end
    end
  end
  return unserved
end

--- What happened to the server of a repository whose server does not run,
--- e.g. "the ctxls server for ~/src/app was killed by signal 9".
---@param root string
---@return string
function M.describe_unserved(root)
  local where = vim.fn.fnamemodify(root, ":~")
  local exit = exits[root]
  if not exit then
    return ("no ctxls server runs for %s (it did not start or was stopped)"):format(where)
  end
  if exit.signal and exit.signal ~= 0 then
    return ("the ctxls server for %s was killed by signal %d"):format(where, exit.signal)
  end
  return ("the ctxls server for %s exited with code %d"):format(where, exit.code)
end

--- Forget how servers exited: :CtxRestart starts them all again.
function M.forget_exits()
  exits = {}
end

--- Whether `cmd`'s program can be run (found on PATH or an executable path).
---@param cmd string[]
function M.executable(cmd)
  return vim.fn.executable(cmd[1]) == 1
end

---@param client vim.lsp.Client
---@param force boolean|nil
function M.stop(client, force)
  stopped_by_plugin[client.id] = true
  if has_client_methods then
    return client:stop(force)
  end
  return client.stop(force)
end

---@param client vim.lsp.Client
---@param method string
---@param params table
---@param handler fun(err: lsp.ResponseError|nil, result: any, ctx: lsp.HandlerContext)
---@param bufnr integer|nil
function M.request(client, method, params, handler, bufnr)
  if has_client_methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

---@param client vim.lsp.Client
---@param method string
---@param params table
---@param timeout_ms integer
---@return { err: lsp.ResponseError|nil, result: any }|nil response, string|nil error
function M.request_sync(client, method, params, timeout_ms)
  if has_client_methods then
    return client:request_sync(method, params, timeout_ms)
  end
  return client.request_sync(method, params, timeout_ms)
end

--- Capabilities Neovim announces plus what this plugin handles itself.
---@param extra table|nil
local function client_capabilities(extra)
  local capabilities = vim.tbl_deep_extend("force", vim.lsp.protocol.make_client_capabilities(), {
    workspace = { codeLens = { refreshSupport = true } },
  })
  return vim.tbl_deep_extend("force", capabilities, extra or {})
end

--- The client configuration shared by both ways of starting the server.
---@param options ctxls.Options
---@param hooks { on_attach: function, handlers: table<string, lsp.Handler>, commands: table<string, function> }
local function lsp_config(options, hooks)
  return {
    name = M.name,
    cmd = options.cmd,
    filetypes = options.filetypes,
    -- An empty Lua table encodes as a JSON array; the server wants an object.
    init_options = next(options.init_options) == nil and vim.empty_dict() or options.init_options,
    capabilities = client_capabilities(options.capabilities),
    on_attach = function(client, bufnr)
      remember_served_name(client.id, bufnr)
      hooks.on_attach(client, bufnr)
    end,
    on_init = function(client)
      exits[client_root(client) or ""] = nil
      server_pids[client.id] = find_server_pid(client)
    end,
    -- Runs while the client still exists, before Neovim removes it.
    on_exit = function(code, signal, client_id)
      local client = vim.lsp.get_client_by_id(client_id)
      if client and not stopped_by_plugin[client_id] then
        exits[client_root(client) or ""] = { code = code, signal = signal }
      end
      stopped_by_plugin[client_id] = nil
      served_names[client_id] = nil
      server_pids[client_id] = nil
    end,
    handlers = hooks.handlers,
    commands = hooks.commands,
  }
end

local augroup = vim.api.nvim_create_augroup("ctxls.start", { clear = true })

--- Start (or reuse, per root) the server for every file buffer inside a repository.
---@param options ctxls.Options
---@param hooks { on_attach: function, handlers: table<string, lsp.Handler>, commands: table<string, function> }
---@return boolean started false when the server executable is missing (nothing is started)
function M.enable(options, hooks)
  local config = lsp_config(options, hooks)
  vim.api.nvim_clear_autocmds({ group = augroup })
  if not M.executable(options.cmd) then
    -- Starting anyway would make Neovim report a spawn failure for every buffer.
    if vim.lsp.is_enabled and vim.lsp.is_enabled(M.name) then
      vim.lsp.enable(M.name, false)
    end
    return false
  end

  local native = options.native_enable and vim.lsp.config and vim.lsp.enable
  local function start(bufnr)
    if not wanted_filetype(bufnr, options) then
      return
    end
    local root = M.find_root(bufnr, options.root_markers)
    if root then
      -- vim.lsp.start reuses the running client with the same name and root
      -- (vim.lsp.enable's too).
      vim.lsp.start(vim.tbl_extend("force", config, { root_dir = root }), { bufnr = bufnr })
    end
  end

  if native then
    -- on_dir is never called outside a repository, so no client starts there.
    vim.lsp.config(M.name, vim.tbl_extend("force", config, {
      root_dir = function(bufnr, on_dir)
        local root = M.find_root(bufnr, options.root_markers)
        if root then
          on_dir(root)
        end
      end,
    }))
    vim.lsp.enable(M.name)
  else
    vim.api.nvim_create_autocmd("FileType", {
      group = augroup,
      callback = function(event)
        start(event.buf)
      end,
    })
  end
  -- A file Neovim gives no filetype (.mdx, .gohtml, .njk) gets no FileType
  -- event, which is all vim.lsp.enable and the autocmd above start on: its
  -- unsaved text never reached the server. Every file buffer is started on
  -- as it is read or created, unless `filetypes` names the ones wanted.
  if not options.filetypes then
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      group = augroup,
      callback = function(event)
        if vim.bo[event.buf].filetype == "" then
          start(event.buf)
        end
      end,
    })
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    -- vim.lsp.enable starts on the loaded buffers with a filetype itself.
    if vim.api.nvim_buf_is_loaded(bufnr) and (not native or vim.bo[bufnr].filetype == "") then
      start(bufnr)
    end
  end
  return true
end

return M
