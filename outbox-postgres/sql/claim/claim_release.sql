-- Deletes a locked claim's record, in the batch's transaction, so it goes
-- when the batch commits and stays if it rolls back.
delete from {claims}
where token = $1
