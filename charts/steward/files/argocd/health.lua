-- Argo CD health of Steward's kinds (steward.dev/v1alpha1). The same
-- script serves the key of every kind in argocd-cm,
-- resource.customizations.health.steward.dev_<Kind>, and obj.kind selects
-- the two rules that differ: a Restore's phase and a Backup's spec.suspend.
--
-- Argo CD runs it without Lua's string library, so it only concatenates.
-- Before any script runs, Argo CD reports an object being deleted as
-- Progressing and an absent one as Missing.
--
-- internal/health/argocd runs it, as Argo CD does, against objects of
-- every kind.

local function condition(conditions, type)
  for _, c in ipairs(conditions or {}) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function isTrue(c)
  return c ~= nil and c.status == "True"
end

-- text is a condition's message, or its reason when it has none.
local function text(c)
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return c.reason or ""
end

local function health(status, message)
  return { status = status, message = message }
end

local status = obj.status
local generation = obj.metadata.generation
if status == nil or status.observedGeneration == nil
    or (generation ~= nil and status.observedGeneration < generation) then
  if generation == nil then
    return health("Progressing", "Waiting for Steward to observe the object")
  end
  return health("Progressing", "Waiting for Steward to observe generation " .. generation)
end

local stalled = condition(status.conditions, "Stalled")
if isTrue(stalled) then
  local message = stalled.reason or ""
  if stalled.message ~= nil and stalled.message ~= "" then
    message = message .. ": " .. stalled.message
  end
  return health("Degraded", message)
end

local ready = condition(status.conditions, "Ready")

if obj.kind == "Restore" then
  if status.phase == "Succeeded" then
    if ready ~= nil then
      return health("Healthy", text(ready))
    end
    return health("Healthy", "Restore succeeded")
  end
  if status.phase == "Failed" then
    if status.message ~= nil and status.message ~= "" then
      return health("Degraded", status.message)
    end
    return health("Degraded", "Restore failed")
  end
end

if obj.kind == "Backup" and obj.spec ~= nil and obj.spec.suspend == true then
  return health("Suspended", "The schedule is suspended (spec.suspend)")
end

if isTrue(ready) then
  return health("Healthy", text(ready))
end

local reconciling = condition(status.conditions, "Reconciling")
if isTrue(reconciling) then
  return health("Progressing", text(reconciling))
end
if ready ~= nil then
  return health("Progressing", text(ready))
end
return health("Progressing", "Waiting for Steward to report the object's conditions")
