--- The server's work-done progress ($/progress: "ctxls: indexing", "ctxls:
--- embedding"): a statusline component and one-line messages.
local client_module = require("ctxls.client")

local M = {}

--- client id → { active = { [token] = { title, message, percentage } }, last = string|nil }
local by_client = {}

local function short_title(title)
  return ((title or ""):gsub("^ctxls:%s*", ""))
end

--- One line for a running task: "indexing 40% 12/30 files".
local function describe(task)
  local parts = { short_title(task.title) }
  if task.percentage then
    table.insert(parts, task.percentage .. "%")
  end
  if task.message and task.message ~= "" then
    table.insert(parts, task.message)
  end
  return table.concat(parts, " ")
end

--- The longest start of `text` that takes at most `cells` screen cells: a
--- wide character (CJK, most emoji) takes two, so characters are not cells.
---@param text string
---@param cells integer
---@return string
local function cut_to_cells(text, cells)
  local kept, used = {}, 0
  for index = 0, vim.fn.strchars(text) - 1 do
    local character = vim.fn.strcharpart(text, index, 1)
    local width = vim.fn.strdisplaywidth(character)
    if used + width > cells then
      break
    end
    table.insert(kept, character)
    used = used + width
  end
  return table.concat(kept)
end

--- Echo one line without a "Press ENTER" prompt: cut to the space left on the
--- command line, counted in screen cells.
---@param chunks [string, string|nil][] text and highlight group pairs
---@param history boolean keep it in :messages
function M.echo(chunks, history)
  local room = math.max(vim.v.echospace, 20)
  local kept, used = {}, 0
  for _, chunk in ipairs(chunks) do
    -- A tab's width depends on where it starts: one line of spaces is simpler to count.
    local text = chunk[1]:gsub("[\n\t]", " ")
    local width = vim.fn.strdisplaywidth(text)
    if used + width > room then
      -- One cell is left for the "…".
      text = cut_to_cells(text, math.max(room - used - 1, 0)) .. "…"
      table.insert(kept, { text, chunk[2] })
      break
    end
    table.insert(kept, { text, chunk[2] })
    used = used + width
  end
  vim.api.nvim_echo(kept, history, {})
end

---@param client_name string
---@param show_messages boolean echo when a task begins and ends
function M.attach(client_name, show_messages)
  vim.api.nvim_create_autocmd("LspProgress", {
    group = vim.api.nvim_create_augroup("ctxls.progress", { clear = true }),
    callback = function(event)
      local client = vim.lsp.get_client_by_id(event.data.client_id)
      local value = event.data.params and event.data.params.value
      if not client or client.name ~= client_name or type(value) ~= "table" then
        return
      end
      local state = by_client[client.id] or { active = {} }
      by_client[client.id] = state
      local token = event.data.params.token
      if value.kind == "begin" then
        state.active[token] = { title = value.title, message = value.message, percentage = value.percentage }
        if show_messages then
          M.echo({ { "ctxls: " .. describe(state.active[token]) } }, false)
        end
      elseif value.kind == "report" and state.active[token] then
        local task = state.active[token]
        task.message = value.message or task.message
        task.percentage = value.percentage or task.percentage
      elseif value.kind == "end" then
        state.active[token] = nil
        if value.message and value.message ~= "" then
          state.last = value.message
          if show_messages then
            M.echo({ { "ctxls: " .. value.message } }, true)
          end
        end
      end
      vim.cmd.redrawstatus()
    end,
  })
end

--- Forget what a client reported: it was stopped (:CtxRestart), so its
--- running tasks will never end and its last message is not the new server's.
---@param client_id integer
function M.forget(client_id)
  by_client[client_id] = nil
end

--- What the server of `client` is doing, for a statusline: "ctxls: indexing
--- 40% 12/30 files", then the last finished task ("ctxls: indexed 30 files
--- (30 new, 0 changed)"); "ctxls: starting" before any report; "" without a client.
---@param client vim.lsp.Client|nil
---@return string
function M.statusline(client)
  if not client then
    return ""
  end
  if client_module.is_stopped(client) then
    return "ctxls: stopping"
  end
  local state = by_client[client.id]
  if not state then
    return client.initialized and "ctxls" or "ctxls: starting"
  end
  local running = {}
  for _, task in pairs(state.active) do
    table.insert(running, describe(task))
  end
  if #running > 0 then
    table.sort(running)
    return "ctxls: " .. table.concat(running, ", ")
  end
  return "ctxls: " .. (state.last or "ready")
end

return M
