--- :checkhealth ctxls
local client_module = require("ctxls.client")
local present = require("ctxls.format").present

local M = {}

local STATUS_TIMEOUT_MS = 2000
local VERSION_TIMEOUT_MS = 5000

--- `cmd` with its "serve" subcommand swapped for --version, or nil when the
--- command is a custom wrapper without one.
local function version_command(cmd)
  for index, word in ipairs(cmd) do
    if word == "serve" then
      local command = vim.list_slice(cmd, 1, index - 1)
      table.insert(command, "--version")
      return command
    end
  end
  return nil
end

local function check_executable(cmd)
  local executable = cmd[1]
  if vim.fn.executable(executable) ~= 1 then
    vim.health.error(
      ("server executable not found: %s"):format(executable),
      { "pip install ctxls (or `make install` in a checkout)", "or set `cmd` in setup() to the full path" }
    )
    return
  end
  vim.health.ok(("server executable: %s"):format(vim.fn.exepath(executable)))
  local command = version_command(cmd)
  if not command then
    vim.health.info("cmd has no `serve` subcommand; cannot ask its version")
    return
  end
  local ok, process = pcall(vim.system, command, { text = true })
  local done = ok and process:wait(VERSION_TIMEOUT_MS)
  if done and done.code == 0 then
    vim.health.ok("version: " .. vim.trim(done.stdout))
  else
    vim.health.warn(
      ("`%s` failed: %s"):format(table.concat(command, " "), done and vim.trim(done.stderr) or "did not run")
    )
  end
end

--- What ranks recall by meaning now, from status `embeddings` (docs/protocol.md
--- ctxls/status: `serving`, `servingText`, `fast`), or nil where it does not say.
---@param embeddings table
---@return string|nil
local function meaning_tier(embeddings)
  local serving = present(embeddings.serving)
  local fast = present(embeddings.fast)
  if serving == "primary" then
    return "the model ranks by meaning"
  elseif serving == "fast" then
    -- servingText says how far the transformer's takeover is; after a model
    -- failure it repeats the error, which the line already gives.
    local text = not present(embeddings.error) and present(embeddings.servingText)
    return text or ("the fast tier (%s) ranks by meaning"):format(fast and fast.model or "static model")
  elseif fast and fast.enabled then
    return ("recall ranks by keywords until the fast tier (%s) has its vectors (%d chunks pending)"):format(
      fast.model,
      fast.pending or 0
    )
  end
  return nil
end

--- The embeddings line: the model, or why it did not load and what ranks by
--- meaning instead (the fast tier), or that recall is lexical only.
---@param embeddings table status `embeddings`
local function check_embeddings(embeddings)
  local tier = meaning_tier(embeddings)
  local failure = present(embeddings.error)
  if failure then
    vim.health.warn(
      ("embeddings: the model could not load: %s; %s"):format(failure, tier or "recall is lexical only"),
      { "fix what the error names (init_options embedModel, embedTokenizer), then :CtxRestart" }
    )
  elseif embeddings.enabled then
    vim.health.ok(
      ("embeddings: %s (%d dimensions)%s"):format(embeddings.model, embeddings.dim, tier and ("; " .. tier) or "")
    )
  else
    vim.health.info("embeddings: off, recall is lexical only")
  end
end

local function check_client(client)
  local buffers = vim.tbl_map(function(bufnr)
    return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":~:.")
  end, vim.tbl_keys(client.attached_buffers))
  local root = client.root_dir or client.config.root_dir
  vim.health.ok(
    ("client %d (root %s) attached to %d buffer(s): %s"):format(client.id, root, #buffers, table.concat(buffers, ", "))
  )

  local response, err = client_module.request_sync(client, "ctxls/status", vim.empty_dict(), STATUS_TIMEOUT_MS)
  if not response or response.err then
    local advice = nil
    if not response and err == "timeout" then
      advice = { ("no answer in %d s: %s"):format(STATUS_TIMEOUT_MS / 1000, client_module.not_answering_advice(client)) }
    end
    vim.health.error("ctxls/status failed: " .. (err or (response and response.err.message) or "no answer"), advice)
    return
  end
  local status = response.result
  local summary = ("index: %d files, %d chunks, %d vectors, %d pending (server %s, %s)"):format(
    status.files,
    status.chunks,
    status.vectors,
    status.pending,
    status.version,
    status.dbPath
  )
  local failure = status.storeError or status.indexError
  if failure then
    -- Not "ok": answers come from what the index holds (the server retries).
    vim.health.error(summary .. ": the index cannot be updated: " .. failure.message)
  elseif status.indexing then
    vim.health.warn(summary .. ": still indexing, results are partial")
  else
    vim.health.ok(summary)
  end
  check_embeddings(status.embeddings)
  if client.server_capabilities.codeLensProvider then
    vim.health.ok("code lenses: served")
  else
    vim.health.info("code lenses: not served by this server version")
  end
end

function M.check()
  vim.health.start("ctxls")
  if vim.fn.has("nvim-0.10") ~= 1 then
    vim.health.error("Neovim 0.10 or newer is required")
    return
  end
  local options = require("ctxls").options
  if not options then
    vim.health.error("setup() has not been called", { 'add require("ctxls").setup() to your config' })
    return
  end
  vim.health.ok(("setup() done; root markers: %s"):format(table.concat(options.root_markers, ", ")))
  check_executable(options.cmd)

  local clients = client_module.all_clients()
  for _, client in ipairs(clients) do
    local root = client.root_dir or client.config.root_dir
    if client_module.is_stopped(client) then
      vim.health.info(("client %d (root %s) is stopping"):format(client.id, root))
    elseif not client.initialized then
      vim.health.warn(("client %d (root %s) is still starting: commands wait for it"):format(client.id, root),
        { "if it stays so, :LspLog has the server's output; :CtxRestart starts it again" })
    else
      check_client(client)
    end
  end
  local unserved = client_module.unserved_roots(options)
  for _, root in ipairs(unserved) do
    vim.health.error(client_module.describe_unserved(root),
      { ":CtxRestart starts it again", ":LspLog has the server's output" })
  end
  if #clients == 0 and #unserved == 0 then
    vim.health.warn("no ctxls client running", {
      "open a file inside a repository (a folder with one of the root markers)",
    })
  end
end

return M
